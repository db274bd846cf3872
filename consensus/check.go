package consensus

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ddrun/ddrun/solver"
)

// A CheckedLink is a WorkerLink whose answers can be wrong while its worker
// is right: a remote worker's report can be forged or damaged on the way.
// The master checks every answer (answerError) and, when it fails, calls
// Rejected with the reason and Step again with the same StepIn; the link
// must then return another answer to the same iteration without running
// the iteration twice (a remote worker answers a repeated step with the
// report it already computed).
//
// With CheckedLinks only, the master also treats an iteration whose dual
// falls below the best primal (impossible for a valid bound) as a fault:
// it asks every worker again once, and fails the run with a *BoundError if
// the bound is still impossible. Links that are not CheckedLinks (LocalLink)
// fail the run at the first answer that fails a check.
type CheckedLink interface {
	WorkerLink
	Rejected(in *StepIn, reason error)
}

// maxRejects bounds how many answers of one worker to one iteration are
// rejected before the run fails: a stream of bad answers ends the run
// instead of holding it for ever.
const maxRejects = 16

// BoundError ends a run whose dual bound fell below its best primal
// (beyond floating error) even after every worker was asked again: some
// answer that passed the checks was still false, and nothing is certified.
type BoundError struct {
	Iter         int
	Dual, Primal float64
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("iteration %d: dual bound %v below the best primal %v, also when asked again: a forged or corrupt report; nothing is certified", e.Iter, e.Dual, e.Primal)
}

// ErrImpossibleBound is the reason given to the links (Rejected) of an
// iteration whose dual fell below the best primal.
var ErrImpossibleBound = errors.New("the iteration's dual bound is below the best primal")

// boundSlack is the floating error allowed between a valid dual bound and
// a primal score.
func boundSlack(primal float64) float64 { return 1e-6 * math.Max(1, math.Abs(primal)) }

// answerShape is what a worker's answer must look like besides its
// lengths known from StepIn.
type answerShape struct {
	cards    []int // the interior variables' cardinalities, in StepOut.X order
	stateLam int   // PartState lengths
	stateNu  int
	stateMu  int
}

// answerError checks worker w's answer to the current iteration: its
// iteration, every vector's length against the part, finite values where
// the numerics need them, decoded states in range. It allocates only when
// it fails.
func (s *master) answerError(w int, gatherX, save bool) error {
	out, in, sh := s.outs[w], s.ins[w], &s.shapes[w]
	switch {
	case out.Iter != s.iter:
		return fmt.Errorf("answered iteration %d for iteration %d", out.Iter, s.iter)
	case len(out.Nu) != len(in.Lambda):
		return fmt.Errorf("%d boundary marginals, want %d", len(out.Nu), len(in.Lambda))
	case math.IsNaN(out.Dual) || math.IsInf(out.Dual, 1) || math.IsNaN(out.Relaxed) || math.IsInf(out.Relaxed, 1):
		return fmt.Errorf("dual %v, relaxed %v", out.Dual, out.Relaxed)
	case !(out.PrimalRes >= 0) || math.IsInf(out.PrimalRes, 1) || !(out.DualRes >= 0) || math.IsInf(out.DualRes, 1):
		return fmt.Errorf("residuals %v and %v", out.PrimalRes, out.DualRes)
	case gatherX && len(out.X) != len(sh.cards):
		return fmt.Errorf("%d decoded states, want %d", len(out.X), len(sh.cards))
	}
	if err := finite(out.Nu); err != nil {
		return fmt.Errorf("boundary marginals: %w", err)
	}
	if gatherX {
		for k, x := range out.X {
			if x < 0 || int(x) >= sh.cards[k] {
				return fmt.Errorf("decoded state %d of %d for interior variable %d", x, sh.cards[k], k)
			}
		}
	}
	if save {
		st := out.State
		switch {
		case st == nil:
			return errors.New("no state")
		case len(st.Lambda) != sh.stateLam || len(st.Nu) != sh.stateNu || len(st.Mu) != sh.stateMu:
			return fmt.Errorf("state of %d/%d/%d entries, want %d/%d/%d", len(st.Lambda), len(st.Nu), len(st.Mu), sh.stateLam, sh.stateNu, sh.stateMu)
		}
		if err := finite(st.Lambda, st.Nu, st.Mu); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}

// checkAnswers checks every worker's answer and asks a CheckedLink again
// for each one that fails; any other link's failed answer is an error.
func (s *master) checkAnswers(ctx context.Context, gatherX, save bool) error {
	for w := range s.outs {
		for tries := 0; ; tries++ {
			err := s.answerError(w, gatherX, save)
			if err == nil {
				break
			}
			cl, ok := s.links[w].(CheckedLink)
			if !ok || tries >= maxRejects {
				return fmt.Errorf("worker %d, iteration %d: %w", w, s.iter, err)
			}
			cl.Rejected(s.ins[w], err)
			if err := s.links[w].Step(ctx, s.ins[w], s.outs[w]); err != nil {
				return fmt.Errorf("worker %d: %w", w, err)
			}
		}
	}
	return nil
}

// impossible reports whether an iteration's dual, the workers' sum
// (without the isolated variables and the constant), is below the best
// primal, or below the floor before there is one: only checked when every
// link is a CheckedLink.
func (s *master) impossible(workersDual float64) bool {
	low := max(s.bestPrimal, s.floor)
	if !s.checked || math.IsInf(low, -1) {
		return false
	}
	dual := workersDual + s.fixedDual
	return math.IsNaN(dual) || dual < low-boundSlack(low)
}

// setFloor scores, for checked runs, the assignment of every variable's
// best unary state: a primal known before the first iteration, so that an
// impossible dual is caught from iteration 1 on. It only serves the
// checks; the iterates do not see it.
func (s *master) setFloor() {
	s.floor = math.Inf(-1)
	if !s.checked || s.shards != nil {
		return // a sharded master has no factors to score
	}
	x := make([]int, s.m.NumVars())
	for v := range x {
		x[v] = bestState(s.m.Unaries(v))
	}
	if sc := s.m.Score(x); !math.IsNaN(sc) {
		s.floor = sc
	}
}

// falseCertificate is the last guard of a checked run: a best dual below
// the best primal (the dual of an iteration before any primal was known)
// fails the run instead of certifying anything.
func (s *master) falseCertificate(res *solver.Result) error {
	if !s.checked || math.IsInf(res.Primal, -1) || res.Dual >= res.Primal-boundSlack(res.Primal) {
		return nil
	}
	return &BoundError{Iter: res.Iterations, Dual: res.Dual, Primal: res.Primal}
}

// reask tells every link that the iteration's answers were rejected.
func (s *master) reask() {
	for w, l := range s.links {
		l.(CheckedLink).Rejected(s.ins[w], ErrImpossibleBound)
	}
}
