package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/fanin"
	"github.com/ddrun/ddrun/transport"
)

// fetchSeq numbers the fetches of the best assignment above every
// evaluation of the run (the worker's answer cache is keyed by number).
const fetchSeq = 1 << 40

// ShardAssignment reaches the best assignment of a sharded run, which the
// workers hold but for its boundary. Valid only during the call of a
// sharded Job's Deliver.
type ShardAssignment struct {
	NumVars      int
	c            *coordinator
	boundaryVars []int // the layout's
	parts        int
	states       []int // the boundary's
	seq          int
}

// Pieces calls fn with the whole assignment in pieces (variables of the
// model and their states; fn must not keep the slices): the boundary
// first, then the workers' interiors, at most 65,536 variables at a time.
// The workers are asked at once, each for one piece after the other, and
// fn is called for one piece at a time, in the order they come
// (internal/fanin): the gathering takes about the largest part's round
// trips, not all parts' one after the other, and holds at most one piece
// per worker.
func (a *ShardAssignment) Pieces(ctx context.Context, fn func(vars []int, states []int32) error) error {
	vars := make([]int, len(a.states))
	states := make([]int32, len(a.states))
	for j, v := range a.boundaryVars {
		vars[j], states[j] = v, int32(a.states[j])
	}
	if err := fn(vars, states); err != nil {
		return err
	}
	seqs := make([]int, a.parts)
	err := fanin.Run(a.parts, func(w int, serial func(func() error) error) error {
		// The same numbers on every worker (each keeps its own last
		// answer), above every earlier request of the run.
		seqs[w] = a.seq
		return a.fetchPart(ctx, w, &seqs[w], func(vars []int, states []int32) error {
			return serial(func() error { return fn(vars, states) })
		})
	})
	a.seq = slices.Max(seqs)
	return err
}

// fetchPart fetches worker w's interior piece by piece (the requests
// numbered after *seq) and calls put with each piece, checked: its sizes
// (every piece but the last whole) and its variables' range.
func (a *ShardAssignment) fetchPart(ctx context.Context, w int, seq *int, put func(vars []int, states []int32) error) error {
	var vars []int
	for k := 0; ; k++ {
		*seq++
		r, err := (&remoteLink{c: a.c, w: w}).request(ctx, &evalBody{Seq: *seq, Op: opFetch, Piece: k})
		if err != nil {
			return err
		}
		if len(r.Vars) != len(r.X) || len(r.Vars) > pieceVars || !r.Last && len(r.Vars) != pieceVars {
			// A piece but the last is whole (Worker.BestPiece): an empty
			// one that never ends the part is refused, not asked after.
			return fmt.Errorf("worker %s: piece %d of %d variables and %d states (last %v)", a.c.name(w), k, len(r.Vars), len(r.X), r.Last)
		}
		vars = vars[:0]
		for _, v := range r.Vars {
			if v < 0 || int(v) >= a.NumVars {
				return fmt.Errorf("worker %s: variable %d out of range [0,%d)", a.c.name(w), v, a.NumVars)
			}
			vars = append(vars, int(v))
		}
		if err := put(vars, r.X); err != nil {
			return err
		}
		if r.Last {
			return nil
		}
	}
}

// withDefaults fills in RunOptions' defaults (Run's).
func (ro RunOptions) withDefaults() RunOptions {
	if ro.WaitWorkers <= 0 {
		ro.WaitWorkers = 30 * time.Second
	}
	if ro.StepTimeout <= 0 {
		ro.StepTimeout = 5 * time.Minute
	}
	if ro.LostAfter <= 0 {
		ro.LostAfter = 3 * time.Second
	}
	if ro.SpareWait <= 0 {
		ro.SpareWait = 10 * time.Second
	}
	if ro.ReleaseAfter <= 0 {
		ro.ReleaseAfter = max(3*ro.LostAfter, 5*time.Second)
	}
	if ro.ResendEvery <= 0 {
		ro.ResendEvery = resendEvery
	}
	if ro.Logger == nil {
		ro.Logger = slog.New(slog.DiscardHandler)
	}
	return ro
}

// Evaluate implements consensus.PrimalLink.
func (l *remoteLink) Evaluate(ctx context.Context, in *consensus.EvalIn, out *consensus.EvalOut) error {
	r, err := l.request(ctx, &evalBody{Seq: in.Seq, Op: uint8(in.Op), X: in.X, Repair: in.Repair, Fixed: in.Fixed, Iter: in.Iter, Allowed: in.Allowed, Block: in.Block, Dom: in.Dom})
	if err != nil {
		return err
	}
	out.Seq, out.Before, out.After, out.X, out.Settled, out.Ref = r.Seq, r.Before, r.After, r.X, r.Settled, nil
	out.Gains, out.Pairs, out.PairGains, out.Allowed = r.Gains, r.Pairs, r.PairGains, r.Allowed
	if in.Op == consensus.EvalSave {
		switch {
		case r.SaveErr != "":
			l.c.log.Warn("no checkpoint: a worker could not save its part's state", "worker", l.c.name(l.w), "iteration", in.Iter, "err", r.SaveErr)
		case len(r.Ref) == 0 || len(r.Ref) > maxStateRef:
			l.c.faults.drop("a state reference of a bad size dropped", "worker", l.c.name(l.w), "bytes", len(r.Ref))
		default:
			out.Ref = r.Ref
		}
	}
	return nil
}

// request sends an evaluation or a fetch to the worker and waits for its
// answer, sending it again when none comes (the worker repeats its answer
// to a repeated request).
func (l *remoteLink) request(ctx context.Context, body *evalBody) (*evaledBody, error) {
	c := l.c
	ctx = context.WithoutCancel(ctx) // like Step: the run ends on a complete exchange
	body.Coord = c.cid
	c.mu.Lock()
	iter := c.sent
	c.mu.Unlock()
	send := func() error {
		name := c.name(l.w)
		if err := c.send(ctx, stepSubject(c.job, name), transport.Header{Iter: uint64(iter), Kind: kindEval}, body); err != nil {
			return fmt.Errorf("evaluation %d to worker %s: %w", body.Seq, name, err)
		}
		return nil
	}
	return exchange(ctx, c, l.w, fmt.Sprintf("evaluation %d", body.Seq), send, c.evals[l.w], func(r *evaledBody) (bool, error) {
		if r.Seq != body.Seq {
			return false, nil // a late answer to an earlier request
		}
		if r.Err != "" {
			return false, fmt.Errorf("worker %s: %s", c.name(l.w), r.Err)
		}
		if r.RSS > 0 && r.RSS < 1<<30 { // a report, only shown: bounded, not trusted further
			c.mu.Lock()
			c.peakRSS[l.w] = max(c.peakRSS[l.w], r.RSS)
			c.mu.Unlock()
		}
		return true, nil
	})
}
