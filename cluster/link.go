package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/transport"
)

// remoteLink reaches one worker over the transport.
type remoteLink struct {
	c    *coordinator
	w    int
	body stepBody
	// sentAt is when the step of body.Iter was first sent; usedDigest
	// the report the master last took for it (certificate.go).
	sentAt     time.Time
	usedDigest reportDigest
	hasUsed    bool
}

// Step implements consensus.WorkerLink.
//
// It finishes the iteration even when ctx is cancelled, so that an
// interrupted run still ends on a complete iteration with its result; the
// step timeout bounds the wait.
func (l *remoteLink) Step(ctx context.Context, in *consensus.StepIn, out *consensus.StepOut) error {
	c := l.c
	ctx = context.WithoutCancel(ctx)
	c.mu.Lock()
	c.sent = max(c.sent, in.Iter)
	c.mu.Unlock()
	t0 := time.Now()
	if in.Iter != l.body.Iter || l.sentAt.IsZero() {
		l.sentAt = t0
	}
	l.body = stepBody{Iter: in.Iter, Eta: in.Eta, PrevStep: in.PrevStep, Lambda: in.Lambda, Mu: in.Mu, GatherX: in.GatherX, Save: in.Save, Coord: c.cid}
	send := func() error {
		name := c.name(l.w)
		if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(in.Iter), Kind: kindStep}, l.body); err != nil {
			return fmt.Errorf("step %d to worker %s: %w", in.Iter, name, err)
		}
		return nil
	}
	r, err := exchange(ctx, c, l.w, fmt.Sprintf("step %d", in.Iter), send, c.reports[l.w], func(r *reportBody) (bool, error) {
		if r.Iter != in.Iter {
			return false, nil // a late answer to an earlier step
		}
		if r.Err != "" {
			// Workers drop the steps they cannot take: a report with an
			// error is not theirs.
			c.invalid(l.w, r.Iter, r.digest)
			c.faults.drop("report with an error dropped", "worker", c.name(l.w), "iteration", r.Iter, "err", r.Err)
			return false, nil
		}
		if err := reportValues(r); err != nil {
			c.invalid(l.w, r.Iter, r.digest)
			c.faults.drop("report rejected", "worker", c.name(l.w), "iteration", r.Iter, "reason", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	c.used(l.w, r.Iter, r.digest)
	l.usedDigest, l.hasUsed = r.digest, true
	c.mu.Lock()
	c.slowestStep = max(c.slowestStep, time.Since(t0))
	c.mu.Unlock()
	if c.onStep != nil {
		c.onStep(c.name(l.w), time.Since(t0))
	}
	// The master checks the answer (consensus.CheckedLink).
	out.Iter, out.Nu, out.Dual, out.Relaxed, out.PrimalRes, out.DualRes, out.Changed, out.X =
		r.Iter, r.Nu, r.Dual, r.Relaxed, r.PrimalRes, r.DualRes, r.Changed, r.X
	out.State = r.State.state()
	return nil
}

// clocks are the timers of a wait for workers: the step deadline, the
// resending of unanswered requests, and the check for silent workers.
type clocks struct {
	deadline      *time.Timer
	resend, check *time.Ticker
}

func (c *coordinator) newClocks() clocks {
	return clocks{time.NewTimer(c.timeout), time.NewTicker(c.resendEvery), time.NewTicker(c.lostAfter / 4)}
}

func (k clocks) stop() {
	k.deadline.Stop()
	k.resend.Stop()
	k.check.Stop()
}

// exchange sends a request to worker w (send) and waits for the answer on
// ch that accept takes (others are late answers to earlier requests, or
// dropped; an error from accept ends the wait). A request not answered
// within resendEvery is sent again: the worker repeats its answer to a
// repeated request. A worker that goes silent is replaced by a spare
// (replace; a sharded run fails there), which gets the request. The step
// timeout bounds the wait.
func exchange[T any](ctx context.Context, c *coordinator, w int, what string, send func() error, ch <-chan *T, accept func(*T) (bool, error)) (*T, error) {
	if err := send(); err != nil {
		return nil, err
	}
	clk := c.newClocks()
	defer clk.stop()
	for {
		select {
		case <-clk.check.C:
			if !c.lost(w) {
				continue
			}
			// The worker went silent: its part restarts on a spare, which
			// answers this same request.
			if _, err := c.replace(ctx, w); err != nil {
				return nil, err
			}
			if err := send(); err != nil {
				return nil, err
			}
			clk.deadline.Reset(c.timeout)
		case <-clk.resend.C:
			// Lost, or a slow answer: the worker repeats what it computed.
			if err := send(); err != nil {
				return nil, err
			}
		case r := <-ch:
			ok, err := accept(r)
			if err != nil {
				return nil, err
			}
			if ok {
				return r, nil
			}
		case <-clk.deadline.C:
			return nil, fmt.Errorf("worker %s did not answer %s within %v", c.name(w), what, c.timeout)
		}
	}
}

// Rejected implements consensus.CheckedLink: the master found the answer
// to in wrong. The next Step sends the step again, and the worker repeats
// the report it computed.
func (l *remoteLink) Rejected(in *consensus.StepIn, reason error) {
	kind := "report rejected"
	if errors.Is(reason, consensus.ErrImpossibleBound) {
		// Which report is false is unknown: none is excused.
		kind = "impossible bound: reports asked again"
	} else if l.hasUsed {
		l.c.invalid(l.w, in.Iter, l.usedDigest)
	}
	l.c.faults.drop(kind, "worker", l.c.name(l.w), "iteration", in.Iter, "reason", reason)
}

// send publishes body on subject from the coordinator of the job, with
// the next sequence number.
func (c *coordinator) send(ctx context.Context, subject string, h transport.Header, body any) error {
	return publish(ctx, c.tr, c.job, c.seq, subject, h, body)
}

// assign ships every worker its part and waits for the acknowledgements.
func (c *coordinator) assign(ctx context.Context, parts []*consensus.Part, opts consensus.Options) error {
	c.bodies = make([]*assignBody, len(parts))
	for w, p := range parts {
		body, err := encodePart(p, w, len(parts), opts)
		if err != nil {
			return err
		}
		body.Base, body.Epoch, body.Coord, body.Next = c.base, c.epoch, c.cid, 1
		if c.latest != nil {
			body.State = wireState(&c.latest.Parts[w])
			body.Next = c.latest.Iter + 1
		}
		c.bodies[w] = body
	}
	all := make([]int, len(parts))
	for w := range all {
		all[w] = w
	}
	return c.deliver(ctx, all)
}

// assignOne ships part w again, to the worker now holding it.
func (c *coordinator) assignOne(ctx context.Context, w int) error {
	for len(c.ready[w]) > 0 {
		<-c.ready[w]
	}
	return c.deliver(ctx, []int{w})
}

// deliver sends the given parts, re-sends those whose receipt is not
// acknowledged, and waits until each worker reports its part built. A
// worker silent for lostAfter since its part was sent (no receipt, no
// heartbeat of the job) is lost, as in a step: its part moves to a spare,
// or the epoch ends (lostError).
func (c *coordinator) deliver(ctx context.Context, which []int) error {
	sendPart := func(w int) error {
		name := c.name(w)
		if err := c.send(ctx, assignSubject(c.job, name), transport.Header{Kind: kindAssign}, c.bodies[w]); err != nil {
			return fmt.Errorf("sending part %d to worker %s: %w", w, name, err)
		}
		// Pace the parts: each is a burst of chunks.
		return c.tr.Flush(ctx)
	}
	for _, w := range which {
		if err := sendPart(w); err != nil {
			return err
		}
		c.seen(w) // silence counts from the part's sending
	}
	clk := c.newClocks()
	defer clk.stop()
	acked := map[int]bool{}
	received := map[int]bool{}
	readyErr := map[int]string{} // refusals heard on an unsealed transport
	for len(acked) < len(which) {
		for _, w := range which {
			if acked[w] {
				continue
			}
			select {
			case r := <-c.ready[w]:
				switch {
				case r.Err != "" && c.sealed:
					return fmt.Errorf("worker %s could not take its part: %s", c.name(w), r.Err)
				case r.Err != "":
					// Unsealed, anyone may have sent it: the wait for the
					// part goes on, and its timeout gives this reason.
					readyErr[w] = r.Err
					c.faults.drop("unauthenticated refusal of a part: still waiting for the worker", "worker", c.name(w), "err", r.Err)
				case r.Received:
					received[w] = true
				default:
					acked[w] = true
					c.seen(w)
					c.mu.Lock()
					c.summaries[w] = r.Summary
					c.mu.Unlock()
				}
			default:
			}
		}
		if len(acked) == len(which) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.deadline.C:
			for _, w := range which {
				if !acked[w] {
					if e := readyErr[w]; e != "" {
						return fmt.Errorf("worker %s could not take its part (said an unauthenticated message): %s", c.name(w), e)
					}
					return fmt.Errorf("worker %s did not acknowledge its part within %v", c.name(w), c.timeout)
				}
			}
		case <-clk.check.C:
			for _, w := range which {
				if acked[w] || !c.lost(w) {
					continue
				}
				if e := readyErr[w]; e != "" {
					// It refused, and went silent: the refusal was its own.
					return fmt.Errorf("worker %s could not take its part: %s", c.name(w), e)
				}
				// Its part goes to a spare, which has acknowledged it
				// when replace returns.
				if _, err := c.replace(ctx, w); err != nil {
					return err
				}
				acked[w] = true
			}
		case <-clk.resend.C:
			for _, w := range which {
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

// onReport hands a worker's acknowledgements (ready) and reports to its
// part's channels, once each: stale and repeated messages are dropped.
func (c *coordinator) onReport(subject string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		c.faults.drop("undecodable message on a report subject dropped", "err", err)
		return
	}
	w := c.index(h.From)
	if w < 0 || subject != reportSubject(c.job, h.From) {
		return // not from a worker holding a part, or not on its subject
	}
	var d reportDigest
	if h.Kind == kindReport {
		d = sha256.Sum256(raw)
	}
	c.mu.Lock()
	if h.Kind == kindReport && h.Iter <= math.MaxInt32 {
		// Before the filter: a forger's Seq can make the honest
		// report look like a duplicate (certificate.go).
		c.hear(w, int(h.Iter), d)
	}
	keep := c.filters[w].Check(h).Keep()
	if keep {
		c.lastSeen[w] = time.Now() // a replayed message is no sign of life
		c.heardFrom(w, h.Seq, h.Kind != kindClaimed)
	}
	c.mu.Unlock()
	if !keep {
		return
	}
	switch h.Kind {
	case kindReady:
		var r readyBody
		if transport.DecodeBody(raw, &r) == nil {
			select {
			case c.ready[w] <- &r:
			default: // repeated acknowledgements: the first ones suffice
			}
		}
	case kindReport:
		var r reportBody
		if err := transport.DecodeBody(raw, &r); err != nil || uint64(r.Iter) != h.Iter {
			c.faults.drop("undecodable report dropped", "worker", h.From, "err", err, "iteration", h.Iter)
			return
		}
		r.digest = d
		select {
		case c.reports[w] <- &r:
		default: // a stray extra: the step already has its answer
		}
	case kindEvaled:
		handOn(c, raw, h.From, c.evals[w], "undecodable evaluation dropped")
	}
}

// handOn decodes a worker's answer (a report, an evaluation) and hands it
// to ch without waiting: an undecodable one is dropped and logged as what,
// and when ch is full it is a stray extra (the step already has its answer).
func handOn[T any](c *coordinator, raw transport.Raw, from string, ch chan<- *T, what string) {
	r := new(T)
	if err := transport.DecodeBody(raw, r); err != nil {
		c.faults.drop(what, "worker", from, "err", err)
		return
	}
	select {
	case ch <- r:
	default:
	}
}

// stop ends the job on every worker.
func (c *coordinator) stop(ctx context.Context) {
	c.mu.Lock()
	names := append([]string(nil), c.names...)
	c.mu.Unlock()
	// Three times: a worker that misses the stop would hold the job until
	// the coordinator's beats stop and its claim lapses (ReleaseAfter). Ahead of every iteration, so no worker's filter
	// takes it as stale; repeats are filtered as duplicates or ignored.
	for range 3 {
		for _, name := range names {
			c.stopWorker(ctx, name)
		}
	}
	_ = c.tr.Flush(ctx)
}

// stopWorker sends worker name the end of the job, once.
func (c *coordinator) stopWorker(ctx context.Context, name string) {
	_ = c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: math.MaxInt32, Kind: kindStep}, stepBody{Stop: true, Coord: c.cid})
}
