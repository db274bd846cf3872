package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/transport"
)

// RunOptions configures a distributed job.
type RunOptions struct {
	Job     string // a transport.ValidName
	Workers int    // how many workers to wait for
	// WaitWorkers bounds the wait for the workers to announce themselves.
	WaitWorkers time.Duration
	// StepTimeout bounds the wait for every worker's answer to one step.
	StepTimeout time.Duration
	// Place assigns each slave of the plan to a worker; nil uses the
	// multilevel partitioner (partition.Place).
	Place  func(m *model.Model, plan partition.Plan, workers int) ([]int32, error)
	Logger *slog.Logger
}

// Run solves m under evidence ev on workers reached through tr, and returns
// the result in m's variables (like consensus.Solve).
func Run(ctx context.Context, tr transport.Transport, m *model.Model, ev model.Evidence, opts consensus.Options, ro RunOptions, progress func(consensus.Progress)) (consensus.Result, error) {
	if err := opts.Validate(); err != nil {
		return consensus.Result{}, err
	}
	if err := transport.ValidName(ro.Job); err != nil {
		return consensus.Result{}, fmt.Errorf("job id %q: %w", ro.Job, err)
	}
	if ro.Workers < 1 {
		return consensus.Result{}, fmt.Errorf("workers: %d < 1", ro.Workers)
	}
	if ro.WaitWorkers <= 0 {
		ro.WaitWorkers = 30 * time.Second
	}
	if ro.StepTimeout <= 0 {
		ro.StepTimeout = 5 * time.Minute
	}
	log := ro.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	red, err := model.Reduce(m, ev)
	if errors.Is(err, model.ErrInfeasible) {
		return consensus.Solve(ctx, m, ev, opts, progress) // nothing to distribute
	}
	if err != nil {
		return consensus.Result{}, err
	}
	plan, err := consensus.Plan(red.Model, opts.Slaves)
	if err != nil {
		return consensus.Result{}, err
	}
	names, err := waitWorkers(ctx, tr, ro.Workers, ro.WaitWorkers)
	if err != nil {
		return consensus.Result{}, err
	}
	log.Info("workers joined", "workers", strings.Join(names, ","))
	place := ro.Place
	if place == nil {
		place = multilevelPlacement
	}
	where, err := place(red.Model, plan, len(names))
	if err != nil {
		return consensus.Result{}, fmt.Errorf("placing slaves: %w", err)
	}
	parts, b, err := consensus.Split(red.Model, plan, where, len(names))
	if err != nil {
		return consensus.Result{}, err
	}
	log.Info("model split", "slaves", len(plan.Slaves), "boundary", len(b.Vars()))
	c := &coordinator{tr: tr, job: ro.Job, names: names, seq: transport.NewSequence(), timeout: ro.StepTimeout,
		reports: make([]chan *reportBody, len(names)), filters: make([]*transport.Filter, len(names))}
	for w := range names {
		c.reports[w] = make(chan *reportBody, 4)
		c.filters[w] = transport.NewFilter(ro.Job, transport.FilterOptions{})
	}
	sub, err := tr.Subscribe(transport.ReportsWildcard(ro.Job), c.onReport)
	if err != nil {
		return consensus.Result{}, err
	}
	defer sub.Unsubscribe()
	defer c.stop(context.WithoutCancel(ctx))
	if err := c.assign(ctx, parts, opts); err != nil {
		return consensus.Result{}, err
	}
	links := make([]consensus.WorkerLink, len(names))
	for w := range names {
		links[w] = &remoteLink{c: c, w: w}
	}
	res, err := consensus.Coordinate(ctx, red.Model, parts, b, links, opts, progress)
	if err != nil {
		return res, err
	}
	return consensus.Finish(m, red, res), nil
}

// multilevelPlacement balances the slaves' estimated solve cost over the
// workers and minimises the variable replicas that cross them.
func multilevelPlacement(m *model.Model, plan partition.Plan, workers int) ([]int32, error) {
	p, err := partition.Place(m, plan, workers, partition.MultilevelOptions{Seed: 1})
	return p.Worker, err
}

// waitWorkers collects n distinct workers announcing themselves on the
// control subject, sorted by name.
func waitWorkers(ctx context.Context, tr transport.Transport, n int, wait time.Duration) ([]string, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	enough := make(chan struct{})
	sub, err := tr.Subscribe(transport.ControlSubject, func(_ string, data []byte) {
		var h transport.Hello
		if _, err := transport.DecodeInto(data, &h); err != nil || transport.ValidName(h.Name) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < n && !seen[h.Name] {
			seen[h.Name] = true
			if len(seen) == n {
				close(enough)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-enough:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for name := range seen {
			got = append(got, name)
		}
		sort.Strings(got)
		return nil, fmt.Errorf("waited %v for %d workers, %d joined [%s]; start more with: worker --nats URL", wait, n, len(got), strings.Join(got, " "))
	}
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, n)
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

type coordinator struct {
	tr      transport.Transport
	job     string
	names   []string
	seq     *transport.Sequence
	timeout time.Duration
	mu      sync.Mutex
	reports []chan *reportBody
	filters []*transport.Filter
	ready   []chan *readyBody
}

func (c *coordinator) index(name string) int {
	i, ok := slices.BinarySearch(c.names, name)
	if !ok {
		return -1
	}
	return i
}

func (c *coordinator) onReport(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		return
	}
	w := c.index(h.From)
	if w < 0 {
		return
	}
	c.mu.Lock()
	keep := c.filters[w].Check(h).Keep()
	c.mu.Unlock()
	if !keep {
		return
	}
	switch h.Kind {
	case kindReady:
		var r readyBody
		if transport.DecodeBody(raw, &r) == nil && c.ready != nil {
			select {
			case c.ready[w] <- &r:
			default: // repeated acknowledgements: the first ones suffice
			}
		}
	case kindReport:
		var r reportBody
		if transport.DecodeBody(raw, &r) == nil {
			select {
			case c.reports[w] <- &r:
			default: // a stray extra report: the step already has its answer
			}
		}
	}
}

func (c *coordinator) send(ctx context.Context, subject string, h transport.Header, body any) error {
	h.Job, h.From, h.Seq = c.job, "coordinator", c.seq.Next()
	data, err := transport.Encode(h, body)
	if err != nil {
		return err
	}
	return c.tr.Publish(ctx, subject, data)
}

// assign ships every worker its part and waits for the acknowledgements.
func (c *coordinator) assign(ctx context.Context, parts []*consensus.Part, opts consensus.Options) error {
	c.ready = make([]chan *readyBody, len(parts))
	for w := range parts {
		c.ready[w] = make(chan *readyBody, 4)
	}
	bodies := make([]*assignBody, len(parts))
	for w, p := range parts {
		body, err := encodePart(p, w, len(parts), opts)
		if err != nil {
			return err
		}
		bodies[w] = body
	}
	sendPart := func(w int) error {
		if err := c.send(ctx, transport.AssignSubject(c.job, c.names[w]), transport.Header{Kind: kindAssign}, bodies[w]); err != nil {
			return fmt.Errorf("sending part %d to worker %s: %w", w, c.names[w], err)
		}
		// Pace the parts: each is a burst of chunks.
		return c.tr.Flush(ctx)
	}
	for w := range parts {
		if err := sendPart(w); err != nil {
			return err
		}
	}
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	resend := time.NewTicker(resendEvery)
	defer resend.Stop()
	acked := make([]bool, len(parts))
	received := make([]bool, len(parts))
	for left := len(parts); left > 0; {
		for w := range parts {
			if acked[w] {
				continue
			}
			select {
			case r := <-c.ready[w]:
				switch {
				case r.Err != "":
					return fmt.Errorf("worker %s could not take its part: %s", c.names[w], r.Err)
				case r.Received:
					received[w] = true
				default:
					acked[w] = true
					left--
				}
			default:
			}
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			for w := range parts {
				if !acked[w] {
					return fmt.Errorf("worker %s did not acknowledge its part within %v", c.names[w], c.timeout)
				}
			}
		case <-resend.C:
			for w := range parts {
				if !received[w] {
					if err := sendPart(w); err != nil {
						return err
					}
				}
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// stop ends the job on every worker.
func (c *coordinator) stop(ctx context.Context) {
	for _, name := range c.names {
		// Ahead of every iteration, so no worker's filter takes it as stale.
		_ = c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: math.MaxInt32, Kind: kindStep}, stepBody{Stop: true})
	}
	_ = c.tr.Flush(ctx)
}

// remoteLink reaches one worker over the transport.
type remoteLink struct {
	c    *coordinator
	w    int
	body stepBody
}

// Step implements consensus.WorkerLink.
//
// It finishes the iteration even when ctx is cancelled, so that an
// interrupted run still ends on a complete iteration with its result; the
// step timeout bounds the wait.
func (l *remoteLink) Step(ctx context.Context, in *consensus.StepIn, out *consensus.StepOut) error {
	c := l.c
	ctx = context.WithoutCancel(ctx)
	l.body = stepBody{Iter: in.Iter, Eta: in.Eta, PrevStep: in.PrevStep, Lambda: in.Lambda, Mu: in.Mu, GatherX: in.GatherX}
	name := c.names[l.w]
	if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(in.Iter), Kind: kindStep}, l.body); err != nil {
		return fmt.Errorf("step %d to worker %s: %w", in.Iter, name, err)
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	resend := time.NewTicker(resendEvery)
	defer resend.Stop()
	for {
		select {
		case <-resend.C:
			// Lost, or a slow iteration: the worker answers a repeated
			// step with the report it already computed.
			if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(in.Iter), Kind: kindStep}, l.body); err != nil {
				return fmt.Errorf("step %d to worker %s: %w", in.Iter, name, err)
			}
		case r := <-c.reports[l.w]:
			if r.Iter != in.Iter {
				continue // a late answer to an earlier step
			}
			if r.Err != "" {
				return fmt.Errorf("worker %s: %s", name, r.Err)
			}
			out.Iter, out.Nu, out.Dual, out.Relaxed, out.PrimalRes, out.DualRes, out.Changed, out.X =
				r.Iter, r.Nu, r.Dual, r.Relaxed, r.PrimalRes, r.DualRes, r.Changed, r.X
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("worker %s did not answer step %d within %v", name, in.Iter, c.timeout)
		}
	}
}
