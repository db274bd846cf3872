package remote

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/internal/fanin"
	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// Options configure the coordinator's side (Run).
type Options struct {
	// Job is the job's id (a transport.ValidName: it namespaces the
	// subjects).
	Job string
	// Wait bounds how long the run waits for its workers to announce
	// themselves and to load their parts (default 2 minutes); StepTimeout
	// for one order's answer (default 2 minutes).
	Wait, StepTimeout time.Duration
	// LostAfter is how long a worker of the run may stay silent (it
	// announces itself every 500 ms, computing or not) before the run
	// fails, with no spare to take its part (default 10 s).
	LostAfter time.Duration
	Logger    *slog.Logger
	// Start is when the run started (its times and time limit count from
	// it; zero: now).
	Start time.Time
	// Deliver, when not nil, gets the assignment of a result with a
	// primal, piece by piece (each variable once), before the workers are
	// released.
	Deliver func(ctx context.Context, numVars int, pieces func(put func(vars []int, states []int32) error) error) error
}

// Seam is what the coordinator of a sharded layout knows of its parts
// (one per worker): the boundary variables' cardinalities, the workers
// holding each, and the model's constant.
func Seam(l *shard.Layout) *dtrws.Seam {
	return &dtrws.Seam{Parts: len(l.Specs), Cards: l.Boundary.Cards, Copies: l.Copies(), Constant: l.Boundary.Constant}
}

// message is an answer from a worker, decoded.
type message struct {
	kind     transport.Kind
	opened   *openedBody
	stepped  *steppedBody
	labelled *labelledBody
}

// coordinator is one run's connection to its workers.
type coordinator struct {
	tr      transport.Transport
	opts    Options
	log     *slog.Logger
	cid     uint64
	seq     *transport.Sequence
	workers []string
	inbox   map[string]chan message
	mu      sync.Mutex
	free    map[string]bool
	seen    map[string]time.Time // a worker's last announcement
	hellos  transport.Newest     // the announcements heard: a replayed one is not news
	drop    ratelimit.Repeats[string]
	found   chan struct{}
}

// Run runs distributed TRW-S on the sharded layout l with workers on tr:
// it finds len(l.Specs) free workers, has each load its part, drives them
// by dtrws.Run (progress as there), delivers the assignment and releases
// the workers.
func Run(ctx context.Context, tr transport.Transport, l *shard.Layout, do dtrws.Options, opts Options, progress func(solver.Progress)) (solver.Result, error) {
	start := opts.Start
	if start.IsZero() {
		start = time.Now()
	}
	if err := transport.ValidName(opts.Job); err != nil {
		return solver.Result{}, fmt.Errorf("trws job %q: %w", opts.Job, err)
	}
	if err := do.Validate(); err != nil {
		return solver.Result{}, err
	}
	if opts.Wait <= 0 {
		opts.Wait = 2 * time.Minute
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 2 * time.Minute
	}
	if opts.LostAfter <= 0 {
		opts.LostAfter = 10 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seam := Seam(l)
	if err := seam.Validate(); err != nil {
		return solver.Result{}, err
	}
	c := &coordinator{tr: tr, opts: opts, log: log, cid: rand.Uint64() | 1, seq: transport.NewSequence(),
		inbox: map[string]chan message{}, free: map[string]bool{}, seen: map[string]time.Time{}, found: make(chan struct{}, 1),
		drop: ratelimit.Repeats[string]{Every: 10 * time.Second}}
	hellos, err := tr.Subscribe(helloSubject, c.onHello)
	if err != nil {
		return solver.Result{}, fmt.Errorf("subscribing for TRW-S workers: %w", err)
	}
	defer hellos.Unsubscribe()
	k := len(l.Specs)
	if err := c.gather(ctx, k); err != nil {
		return solver.Result{}, err
	}
	answers, err := tr.Subscribe(answersWildcard(opts.Job), c.onAnswer)
	if err != nil {
		return solver.Result{}, fmt.Errorf("subscribing for TRW-S answers: %w", err)
	}
	defer answers.Unsubscribe()
	if err := tr.Flush(ctx); err != nil {
		return solver.Result{}, err
	}
	defer c.close()
	links, err := c.open(ctx, l, seam)
	if err != nil {
		return solver.Result{}, err
	}
	log.Info("trws: parts loaded", "workers", k, "boundary", len(seam.Cards), "seconds", time.Since(start).Seconds())
	dl := make([]dtrws.Link, k)
	for p := range links {
		dl[p] = links[p]
	}
	res, err := dtrws.Run(ctx, seam, dl, do, start, progress)
	if err != nil {
		return solver.Result{}, err
	}
	if opts.Deliver != nil && !math.IsInf(res.Primal, -1) {
		err := opts.Deliver(context.WithoutCancel(ctx), l.NumVars, func(put func([]int, []int32) error) error {
			return c.pieces(context.WithoutCancel(ctx), l, seam, links, put)
		})
		if err != nil {
			return solver.Result{}, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (c *coordinator) publish(ctx context.Context, worker string, body any) error {
	data, err := transport.Encode(transport.Header{Job: c.opts.Job, From: "coordinator", Seq: c.seq.Next()}, body)
	if err != nil {
		return err
	}
	return c.tr.Publish(ctx, orderSubject(c.opts.Job, worker), data)
}

// onHello notes the free workers.
func (c *coordinator) onHello(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil || h.Kind != kindHello || transport.ValidName(h.From) != nil {
		return
	}
	var b helloBody
	if transport.DecodeBody(raw, &b) != nil || !c.hellos.Admit(h.From, h.Seq) {
		return // malformed, or not newer than the sender's last (replayed)
	}
	c.mu.Lock()
	c.free[h.From] = b.Job == "" // at most hellos' Max senders: Admit refuses others
	c.seen[h.From] = time.Now()
	c.mu.Unlock()
	select {
	case c.found <- struct{}{}:
	default:
	}
}

// gather waits for k free workers (the first k by name).
func (c *coordinator) gather(ctx context.Context, k int) error {
	data, err := transport.Encode(transport.Header{From: "coordinator"}, solicitBody{})
	if err != nil {
		return err
	}
	if err := c.tr.Publish(ctx, solicitSubject, data); err != nil {
		return fmt.Errorf("looking for TRW-S workers: %w", err)
	}
	timer := time.NewTimer(c.opts.Wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		var names []string
		for n, free := range c.free {
			if free {
				names = append(names, n)
			}
		}
		c.mu.Unlock()
		if len(names) >= k {
			slices.Sort(names)
			c.workers = names[:k]
			for _, n := range c.workers {
				c.inbox[n] = make(chan message, 8)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("trws: waited %v for %d free workers, %d found; start more with: worker --nats URL", c.opts.Wait, k, len(names))
		case <-c.found:
		}
	}
}

// onAnswer takes an answer on the subject of one of the run's workers,
// from it, of this run (the coordinator id is checked by the waiter).
func (c *coordinator) onAnswer(subject string, data []byte) {
	worker := subject[strings.LastIndexByte(subject, '.')+1:]
	box, ok := c.inbox[worker]
	if !ok {
		return
	}
	h, raw, err := transport.Decode(data)
	if err != nil || h.From != worker || h.Job != c.opts.Job {
		c.dropped("answer dropped", "worker", worker, "from", h.From, "err", err)
		return
	}
	var m message
	m.kind = h.Kind
	switch h.Kind {
	case kindOpened:
		m.opened = &openedBody{}
		err = transport.DecodeBody(raw, m.opened)
	case kindStepped:
		m.stepped = &steppedBody{}
		err = transport.DecodeBody(raw, m.stepped)
	case kindLabelled:
		m.labelled = &labelledBody{}
		err = transport.DecodeBody(raw, m.labelled)
	default:
		err = fmt.Errorf("kind %v", h.Kind)
	}
	if err != nil {
		c.dropped("answer dropped", "worker", worker, "err", err)
		return
	}
	select {
	case box <- m:
	default:
		c.dropped("answer dropped, the queue is full", "worker", worker)
	}
}

// dropped logs an answer dropped for reason, at most once per interval per
// reason (a flood of forged answers costs a few lines).
func (c *coordinator) dropped(reason string, args ...any) {
	if n, ok := c.drop.Admit(reason); ok {
		c.log.Warn("trws: "+reason, append(args, "dropped", n+1)...)
	}
}

// await returns the next answer of worker that ok accepts (others are
// dropped: stale, or of another coordinator).
func (c *coordinator) await(ctx context.Context, worker string, timeout time.Duration, ok func(message) bool) (message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	alive := time.NewTicker(min(c.opts.LostAfter/4, time.Second))
	defer alive.Stop()
	for {
		select {
		case <-ctx.Done():
			return message{}, ctx.Err()
		case <-timer.C:
			return message{}, fmt.Errorf("trws: worker %s did not answer within %v", worker, timeout)
		case <-alive.C:
			c.mu.Lock()
			quiet := time.Since(c.seen[worker])
			c.mu.Unlock()
			if quiet > c.opts.LostAfter {
				return message{}, fmt.Errorf("trws: worker %s lost (silent for %v): distributed TRW-S has no spare workers to take its part; run again, or run --algo admm, whose parts move to spares", worker, quiet.Round(time.Millisecond))
			}
		case m := <-c.inbox[worker]:
			if ok(m) {
				return m, nil
			}
		}
	}
}

// open has every worker load its part and checks the parts' shapes.
func (c *coordinator) open(ctx context.Context, l *shard.Layout, seam *dtrws.Seam) ([]*link, error) {
	k := len(l.Specs)
	links := make([]*link, k)
	for p := range k {
		spec, err := l.Specs[p].Encode()
		if err != nil {
			return nil, err
		}
		copies := make(transport.Int32s, len(l.Of[p]))
		for i, j := range l.Of[p] {
			copies[i] = int32(len(seam.Copies[j]))
		}
		if err := c.publish(ctx, c.workers[p], openBody{CID: c.cid, Spec: spec, Copies: copies}); err != nil {
			return nil, fmt.Errorf("trws: opening the job on %s: %w", c.workers[p], err)
		}
		links[p] = &link{c: c, worker: c.workers[p], width: seam.Width(p), count: len(l.Of[p])}
	}
	for p, lk := range links {
		m, err := c.await(ctx, lk.worker, c.opts.Wait, func(m message) bool { return m.kind == kindOpened && m.opened.CID == c.cid })
		if err != nil {
			return nil, err
		}
		o := m.opened
		switch {
		case o.Err != "":
			return nil, fmt.Errorf("trws: worker %s: part %d: %s", lk.worker, p, o.Err)
		case o.Width != lk.width || o.Count != lk.count || o.Vars < lk.count || o.Vars > l.Specs[p].NumVars:
			return nil, fmt.Errorf("trws: worker %s: part %d of %d copies over %d states, %d variables; the plan has %d copies over %d states",
				lk.worker, p, o.Count, o.Width, o.Vars, lk.count, lk.width)
		}
		lk.vars = o.Vars
	}
	return links, nil
}

// close releases the workers.
func (c *coordinator) close() {
	for _, w := range c.workers {
		_ = c.publish(context.Background(), w, closeBody{CID: c.cid})
	}
}

// link is a worker's part as dtrws.Run sees it.
type link struct {
	c            *coordinator
	worker       string
	width, count int
	vars         int
	seq          uint64
}

// Step implements dtrws.Link.
func (l *link) Step(ctx context.Context, in *dtrws.StepIn, out *dtrws.StepOut) error {
	l.seq++
	b := stepBody{CID: l.c.cid, Seq: l.seq, Delta: in.Delta, HasDelta: in.Delta != nil, Iters: in.Iters, Keep: in.Keep,
		States: in.States, HasStates: in.States != nil, Polish: in.Polish, Sweeps: in.Sweeps}
	if err := l.c.publish(ctx, l.worker, b); err != nil {
		return fmt.Errorf("worker %s: %w", l.worker, err)
	}
	seq := l.seq
	m, err := l.c.await(ctx, l.worker, l.c.opts.StepTimeout, func(m message) bool {
		return m.kind == kindStepped && m.stepped.CID == l.c.cid && m.stepped.Seq == seq
	})
	if err != nil {
		return err
	}
	if err := checkStepped(m.stepped, in, l.width, l.count, out); err != nil {
		return fmt.Errorf("worker %s: %w", l.worker, err)
	}
	return nil
}

// Labels implements dtrws.Link (the labels of the part's variables, in
// their order).
func (l *link) Labels(ctx context.Context) ([]int32, error) {
	x := make([]int32, 0, l.vars)
	err := l.labelled(ctx, func(_, labels []int32) error {
		x = append(x, labels...)
		return nil
	})
	return x, err
}

// labelled asks for the part's variables and kept labels, a piece of at
// most labelPiece at a time, checks each and hands it to fn (which must
// not keep the slices). Up to labelWindow pieces are asked ahead (the
// worker answers its orders in turn, so the answers come in the order
// asked): the round trips overlap, and no more than labelWindow pieces
// wait here.
func (l *link) labelled(ctx context.Context, fn func(vars, x []int32) error) error {
	pieces := max(1, (l.vars+labelPiece-1)/labelPiece) // the worker's, if it is honest
	first := l.seq + 1                                 // piece k's order is numbered first+k
	asked := 0
	for k := 0; ; k++ {
		for ; asked < pieces && asked < k+labelWindow; asked++ {
			l.seq++
			if err := l.c.publish(ctx, l.worker, labelsBody{CID: l.c.cid, Seq: l.seq, From: int32(asked * labelPiece)}); err != nil {
				return fmt.Errorf("worker %s: %w", l.worker, err)
			}
		}
		if k >= asked {
			return fmt.Errorf("worker %s: the part's %d variables did not end after %d pieces", l.worker, l.vars, k)
		}
		from, seq := k*labelPiece, first+uint64(k)
		m, err := l.c.await(ctx, l.worker, l.c.opts.StepTimeout, func(m message) bool {
			return m.kind == kindLabelled && m.labelled.CID == l.c.cid && m.labelled.Seq == seq
		})
		if err != nil {
			return err
		}
		a := m.labelled
		n := len(a.Vars)
		switch {
		case a.Err != "":
			return fmt.Errorf("worker %s: %s", l.worker, a.Err)
		case len(a.Labels) != n || int(a.From) != from || n > labelPiece || from+n > l.vars || a.Last != (from+n == l.vars) || !a.Last && n != labelPiece:
			return fmt.Errorf("worker %s: %d variables and %d labels from %d (last %v) for a part of %d asked from %d",
				l.worker, n, len(a.Labels), a.From, a.Last, l.vars, from)
		}
		if err := fn(a.Vars, a.Labels); err != nil {
			return err
		}
		if a.Last {
			return nil
		}
	}
}

// pieces gives the parts' assignments to put, each variable once (a
// boundary variable from the first part that holds it), checked: the
// variables increasing and in range, the states >= 0. The workers are
// asked at once, each for one piece after the other, and put gets one
// piece at a time, in the order they come (internal/fanin): the
// gathering takes about the largest part's round trips, and holds at most
// labelWindow pieces per worker (labelled).
func (c *coordinator) pieces(ctx context.Context, l *shard.Layout, seam *dtrws.Seam, links []*link, put func([]int, []int32) error) error {
	err := fanin.Run(len(links), func(p int, serial func(func() error) error) error {
		return c.part(ctx, l, seam, p, links[p], func(vs []int, st []int32) error {
			return serial(func() error { return put(vs, st) })
		})
	})
	if err != nil {
		return fmt.Errorf("trws: the assignment: %w", err)
	}
	return nil
}

// part gives part p's variables but the boundary ones other parts give
// (pieces) to put, checked.
func (c *coordinator) part(ctx context.Context, l *shard.Layout, seam *dtrws.Seam, p int, lk *link, put func([]int, []int32) error) error {
	vs := make([]int, 0, labelPiece)
	st := make([]int32, 0, labelPiece)
	prev := int32(-1)
	j := 0 // the first boundary variable not below prev: the variables increase
	return lk.labelled(ctx, func(vars, x []int32) error {
		vs, st = vs[:0], st[:0]
		for i, v := range vars {
			if v <= prev || int(v) >= l.NumVars || x[i] < 0 {
				return fmt.Errorf("worker %s: variable %d in state %d out of range or order", lk.worker, v, x[i])
			}
			prev = v
			for j < len(l.BoundaryVars) && l.BoundaryVars[j] < int(v) {
				j++
			}
			if j < len(l.BoundaryVars) && l.BoundaryVars[j] == int(v) && int(seam.Copies[j][0]) != p {
				continue // shared, and given by the first part that holds it
			}
			vs, st = append(vs, int(v)), append(st, x[i])
		}
		return put(vs, st)
	})
}
