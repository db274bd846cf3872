package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// A certificate (status optimal) rests on the workers' reports: their duals
// sum to the bound that closed the gap. On a transport where anyone can
// publish (no job key), a forger who answers a step before the worker
// does can put any plausible report in its place, so a dual a hair from
// the best primal passes every check the master can make (the issue's
// false certificate; no tolerance on the gap test helps, since a forger
// aims inside it). The honest worker still answers: its report for the
// same iteration arrives too, and differs. So the coordinator
//
//   - keeps a digest of every report it hears for the recent iterations of
//     each part, before the filter (a forger's Seq can make the honest
//     report look like a duplicate or a stale message), the one the
//     master took, and those the master rejected as invalid;
//   - before it ends a run optimal, asks every worker for the last
//     iteration's report again (a repeat: the worker answers with the report
//     it computed) and takes the certificate only when the answer is the
//     report the master used;
//   - on an unsealed transport, waits for the honest answers to the last
//     step to arrive (twice the slowest answer of the run after the step
//     was sent) before it trusts that no other report is coming;
//   - fails the run (*ConflictError) when a worker's used report and
//     another report for the same iteration, not rejected by the checks,
//     disagree: one of them is forged, and nothing is certified.
//
// What this cannot do without a job key: a forger that answers faster than
// the worker and whose forgeries the worker's own answers do not reach
// within the wait (a worker slower at the last step than twice its slowest
// one before) can still be believed. docs/security.md says so.

// reportDigest identifies a report's content.
type reportDigest [sha256.Size]byte

// heardIter is what a part's worker sent for one iteration.
type heardIter struct {
	seen     []reportDigest // distinct reports heard, at most maxHeard
	overflow bool           // more distinct reports than maxHeard
	used     reportDigest   // the report the master took
	hasUsed  bool
	invalid  []reportDigest // reports the master's checks rejected
}

const (
	// keepHeard is how many iterations below the newest sent the
	// reports' digests are kept; maxHeard bounds the distinct reports
	// kept per iteration (more: a flood, itself a conflict).
	keepHeard = 64
	maxHeard  = 8
	// maxMagnitude bounds every value of a report: legitimate bounds,
	// marginals and multipliers are far below it, and a sum of many such
	// values stays far from overflowing (one report of 1e308 made the
	// coordinator's state NaN).
	maxMagnitude = 1e100
)

// ConflictError ends a run whose certificate rests on a report that another
// report of the same worker for the same iteration contradicts.
type ConflictError struct {
	Worker string
	Iter   int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("worker %s sent two different reports for iteration %d: a forged message (use a job key); nothing is certified", e.Worker, e.Iter)
}

func (h *heardIter) conflict() bool {
	if !h.hasUsed {
		return false
	}
	if h.overflow {
		return true
	}
	for _, d := range h.seen {
		if d != h.used && !containsDigest(h.invalid, d) {
			return true
		}
	}
	return false
}

func containsDigest(ds []reportDigest, d reportDigest) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// hear records a report for part w's iteration iter (guarded by c.mu).
func (c *coordinator) hear(w, iter int, d reportDigest) {
	if iter > c.sent+4 || iter < c.sent-keepHeard {
		return // not an iteration a step can take
	}
	log := c.heard[w]
	if log == nil {
		log = map[int]*heardIter{}
		c.heard[w] = log
	}
	h := log[iter]
	if h == nil {
		if len(log) >= 2*keepHeard {
			c.pruneHeard(w)
		}
		h = &heardIter{}
		log[iter] = h
	}
	switch {
	case containsDigest(h.seen, d):
	case len(h.seen) >= maxHeard:
		h.overflow = true
	default:
		h.seen = append(h.seen, d)
	}
	if h.conflict() && c.conflict == nil {
		c.conflict = &ConflictError{Worker: c.names[w], Iter: iter}
	}
}

// pruneHeard forgets part w's iterations older than keepHeard below the
// newest sent, and those too far ahead, keeping the first conflict they
// hold (guarded by c.mu).
func (c *coordinator) pruneHeard(w int) {
	for it, h := range c.heard[w] {
		if it < c.sent-keepHeard || it > c.sent+4 {
			if h.conflict() && c.conflict == nil {
				c.conflict = &ConflictError{Worker: c.names[w], Iter: it}
			}
			delete(c.heard[w], it)
		}
	}
}

// used records that the master took report d for part w's iteration iter;
// invalid that its checks rejected it.
func (c *coordinator) used(w, iter int, d reportDigest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.heard[w][iter]; h != nil {
		h.used, h.hasUsed = d, true
		if h.conflict() && c.conflict == nil {
			c.conflict = &ConflictError{Worker: c.names[w], Iter: iter}
		}
	}
}

func (c *coordinator) invalid(w, iter int, d reportDigest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.heard[w][iter]; h != nil && !containsDigest(h.invalid, d) && len(h.invalid) < maxHeard {
		h.invalid = append(h.invalid, d)
	}
}

func (c *coordinator) isInvalid(w, iter int, d reportDigest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.heard[w][iter]
	return h != nil && containsDigest(h.invalid, d)
}

// forget drops part w's reports (its part moved to another worker).
func (c *coordinator) forget(w int) {
	c.heard[w] = nil
}

// conflicted returns the first conflict among the reports heard.
func (c *coordinator) conflicted() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conflict != nil {
		return c.conflict
	}
	for w, log := range c.heard {
		for it, h := range log {
			if h.conflict() {
				c.conflict = &ConflictError{Worker: c.names[w], Iter: it}
				return c.conflict
			}
		}
	}
	return nil
}

// reportValues checks a report's values for magnitude: every float finite
// and at most maxMagnitude in absolute value (a sum of such stays finite),
// but for a dual and relaxed bound of minus infinity (an infeasible part).
func reportValues(r *reportBody) error {
	for k, v := range []float64{r.Dual, r.Relaxed, r.PrimalRes, r.DualRes} {
		if k < 2 && math.IsInf(v, -1) {
			continue // an infeasible part's bound
		}
		if !(math.Abs(v) <= maxMagnitude) {
			return fmt.Errorf("value %v out of range", v)
		}
	}
	vecs := []transport.Floats{r.Nu}
	if r.State != nil {
		vecs = append(vecs, r.State.Lambda, r.State.Nu, r.State.Mu)
	}
	for _, vec := range vecs {
		for _, v := range vec {
			if !(math.Abs(v) <= maxMagnitude) {
				return fmt.Errorf("value %v out of range", v)
			}
		}
	}
	return nil
}

// confirm defends a certificate before the run ends optimal: every worker
// is asked for its last report again, and must answer with the report the
// master used; on an unsealed transport the coordinator then waits until
// the honest answers to the last step have had time to arrive; and no
// other valid report may contradict a used one (see the top of this file).
func (c *coordinator) confirm(ctx context.Context, links []*remoteLink) error {
	if err := c.conflicted(); err != nil {
		return err
	}
	var until time.Time
	for _, l := range links {
		if !l.hasUsed {
			continue // no step taken (a run that ended before its first)
		}
		it, want := l.body.Iter, l.usedDigest
		send := func() error {
			name := c.name(l.w)
			if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(it), Kind: kindStep}, l.body); err != nil {
				return fmt.Errorf("confirming step %d with worker %s: %w", it, name, err)
			}
			return nil
		}
		if _, err := exchange(ctx, c, l.w, fmt.Sprintf("the confirmation of step %d", it), send, c.reports[l.w], func(r *reportBody) (bool, error) {
			if r.Iter != it || r.Err != "" {
				return false, nil
			}
			if r.digest != want && !c.isInvalid(l.w, it, r.digest) {
				return false, &ConflictError{Worker: c.name(l.w), Iter: it}
			}
			return true, nil
		}); err != nil {
			return err
		}
		until = later(until, l.sentAt.Add(2*c.slowest()+50*time.Millisecond))
	}
	if !c.sealed {
		if d := time.Until(until); d > 0 {
			t := time.NewTimer(min(d, c.timeout))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	return c.conflicted()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// slowest is the longest a worker took to answer a step in this epoch.
func (c *coordinator) slowest() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slowestStep
}

// certify confirms res's certificate (status optimal, or infeasible: a
// bound of minus infinity) on the links of the epoch; any other result
// passes unchanged.
func (c *coordinator) certify(ctx context.Context, res solver.Result, err error) error {
	if err != nil || res.Status != solver.Optimal && res.Status != solver.Infeasible {
		return err
	}
	if err := c.confirm(context.WithoutCancel(ctx), c.linkList); err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			c.log.Warn("certificate refused: two different reports for one iteration", "worker", ce.Worker, "iteration", ce.Iter)
		}
		return err
	}
	return nil
}
