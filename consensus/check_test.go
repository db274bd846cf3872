package consensus

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/solver"
)

// forgingLink runs a Worker in process like LocalLink, but answers a
// repeated iteration with the answer it kept (as a remote worker does),
// and lets forge replace an answer, as a forged report would.
type forgingLink struct {
	w        *Worker
	last     int
	nu       []float64
	x        []int32
	kept     StepOut
	forge    func(out *StepOut) bool // true: it forged out
	rejected []error
}

func (l *forgingLink) Step(_ context.Context, in *StepIn, out *StepOut) error {
	if in.Iter == l.last {
		*out = l.kept
		out.Nu, out.X = append(out.Nu[:0], l.nu...), append(out.X[:0], l.x...)
		return nil
	}
	l.w.Step(in, out)
	l.last, l.kept = in.Iter, *out
	l.nu, l.x = slices.Clone(out.Nu), slices.Clone(out.X)
	if l.forge != nil {
		l.forge(out)
	}
	return nil
}

func (l *forgingLink) Rejected(_ *StepIn, reason error) { l.rejected = append(l.rejected, reason) }

// forgeFixture is a small Potts grid, options, its plan and its
// undisturbed result on two in-process workers.
func forgeFixture(tb testing.TB, side, maxIter int) (*model.Model, Options, partition.Plan, solver.Result) {
	tb.Helper()
	m := generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: 3, Rho: 1, Seed: 7})
	opts := DefaultOptions()
	opts.MaxIter = maxIter
	plan := mustPlan(tb, m, opts.Slaves)
	want, err := runLocal(context.Background(), m, plan, opts, 2, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return m, opts, plan, want
}

// forgedRun solves m on two in-process workers whose first link forges
// answers with forge, and returns the result and the reasons the master
// gave for rejecting answers.
func forgedRun(t *testing.T, m *model.Model, opts Options, forge func(iter int, out *StepOut) bool) (solver.Result, []error, error) {
	t.Helper()
	plan := mustPlan(t, m, opts.Slaves)
	s, entries := testLocal(t, m, plan, opts, 2)
	links := make([]*forgingLink, len(s.links))
	for w := range s.links {
		links[w] = &forgingLink{w: s.links[w].(LocalLink).W}
		s.links[w] = links[w]
	}
	iter := 0
	links[0].forge = func(out *StepOut) bool { iter++; return forge(iter, out) }
	s.checked = true
	res, err := s.run(context.Background(), entries, nil, nil)
	return res, links[0].rejected, err
}

// Answers that fail the checks, or add up to a dual below the best primal,
// are asked for again: the run ends as an undisturbed one.
func TestForgedAnswersAreAskedAgain(t *testing.T) {
	m, opts, _, want := forgeFixture(t, 10, 300)
	forgeries := map[string]func(out *StepOut){
		"empty nu":     func(out *StepOut) { out.Nu = nil },
		"nan nu":       func(out *StepOut) { out.Nu = append(out.Nu[:0:0], out.Nu...); out.Nu[0] = math.NaN() },
		"dual -1e6":    func(out *StepOut) { out.Dual = -1e6 },
		"nan dual":     func(out *StepOut) { out.Dual = math.NaN() },
		"wrong iter":   func(out *StepOut) { out.Iter += 1000 },
		"neg residual": func(out *StepOut) { out.PrimalRes = -1 },
		"x out of range": func(out *StepOut) {
			if len(out.X) > 0 {
				out.X = append(out.X[:0:0], out.X...)
				out.X[0] = 99
			}
		},
	}
	for name, f := range forgeries {
		t.Run(name, func(t *testing.T) {
			got, rejected, err := forgedRun(t, m, opts, func(iter int, out *StepOut) bool {
				if iter == 1 || iter == 20 { // 1: the first primal check gathers x
					f(out)
					return true
				}
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rejected) == 0 {
				t.Error("no answer rejected")
			}
			if got.Status != want.Status || got.Iterations != want.Iterations || got.Dual != want.Dual || got.Primal != want.Primal {
				t.Errorf("forged: %v after %d, dual %v primal %v; undisturbed: %v after %d, dual %v primal %v",
					got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
			}
		})
	}
}

// A dual below the best primal that comes back when asked again fails the
// run: nothing is certified.
func TestRepeatedImpossibleBoundFails(t *testing.T) {
	m, opts, plan, _ := forgeFixture(t, 10, 300)
	s, entries := testLocal(t, m, plan, opts, 2)
	for w := range s.links {
		s.links[w] = &forgingLink{w: s.links[w].(LocalLink).W}
	}
	s.links[0] = &lyingLink{s.links[0].(*forgingLink)}
	s.checked = true
	_, err := s.run(context.Background(), entries, nil, nil)
	var be *BoundError
	if !errors.As(err, &be) {
		t.Fatalf("run: %v, want a BoundError", err)
	}
}

// lyingLink lowers every answer's dual, repeats included.
type lyingLink struct{ *forgingLink }

func (l *lyingLink) Step(ctx context.Context, in *StepIn, out *StepOut) error {
	err := l.forgingLink.Step(ctx, in, out)
	out.Dual -= 1e6
	return err
}

// A link that is not a CheckedLink fails the run at a bad answer, without
// a panic.
func TestUncheckedBadAnswerFails(t *testing.T) {
	m, opts, plan, _ := forgeFixture(t, 6, 300)
	s, entries := testLocal(t, m, plan, opts, 2)
	s.links[1] = badLink{s.links[1].(LocalLink)}
	if _, err := s.run(context.Background(), entries, nil, nil); err == nil {
		t.Fatal("a bad answer was used")
	}
}

type badLink struct{ LocalLink }

func (l badLink) Step(ctx context.Context, in *StepIn, out *StepOut) error {
	err := l.LocalLink.Step(ctx, in, out)
	out.Nu = out.Nu[:0]
	return err
}

// FuzzForgedAnswer feeds the master one decoded but inconsistent answer
// (random iteration, lengths, values, flags) in place of a worker's real
// one, at a random iteration, through a CheckedLink: the run never
// panics, and never certifies a dual below its primal; an answer the
// checks reject leaves the run exactly undisturbed.
func FuzzForgedAnswer(f *testing.F) {
	f.Add(uint8(1), int8(0), int16(-1), 0.5, -1e6, 1.0, 0.0, 0.0, int32(0), int16(-1), uint8(0))
	f.Add(uint8(3), int8(0), int16(0), 0.5, 10.0, 1.0, 0.0, 0.0, int32(0), int16(-1), uint8(0))
	f.Add(uint8(10), int8(100), int16(-1), 0.5, 10.0, 1.0, 0.0, 0.0, int32(0), int16(-1), uint8(0))
	f.Add(uint8(2), int8(0), int16(-1), math.NaN(), 10.0, 1.0, 0.0, 0.0, int32(0), int16(-1), uint8(0))
	f.Add(uint8(1), int8(0), int16(-1), 0.5, 10.0, math.Inf(1), -1.0, 0.0, int32(7), int16(3), uint8(1))
	f.Add(uint8(10), int8(0), int16(-1), 0.5, math.Inf(-1), 1.0, 0.0, math.NaN(), int32(-1), int16(-1), uint8(2))
	f.Add(uint8(1), int8(0), int16(-1), 0.5, 1e300, 1.0, 0.0, 0.0, int32(0), int16(-1), uint8(3))
	m, opts, _, want := forgeFixture(f, 6, 40)
	f.Fuzz(func(t *testing.T, at uint8, dIter int8, nuLen int16, nuVal, dual, relaxed, pres, dres float64, xVal int32, xLen int16, flags uint8) {
		got, reasons, err := forgedRun(t, m, opts, func(iter int, out *StepOut) bool {
			if iter != int(at%20)+1 {
				return false
			}
			out.Iter += int(dIter)
			if nuLen >= 0 {
				out.Nu = make([]float64, int(nuLen)%512)
			} else {
				out.Nu = slices.Clone(out.Nu)
			}
			if len(out.Nu) > 0 {
				out.Nu[int(xLen&0x7fff)%len(out.Nu)] = nuVal
			}
			out.Dual, out.Relaxed, out.PrimalRes, out.DualRes = dual, relaxed, pres, dres
			if xLen >= 0 {
				out.X = make([]int32, int(xLen)%512)
			} else {
				out.X = slices.Clone(out.X)
			}
			if len(out.X) > 0 {
				out.X[0] = xVal
			}
			if flags&1 != 0 {
				out.Changed = !out.Changed
			}
			if flags&2 != 0 {
				out.State = &PartState{Lambda: out.Nu}
			}
			return true
		})
		if err != nil {
			return // the run failed: it certified nothing
		}
		if got.Status == solver.Optimal && got.Dual < got.Primal-boundSlack(got.Primal) {
			t.Fatalf("optimal with dual %v below primal %v", got.Dual, got.Primal)
		}
		if len(reasons) > 0 && (got.Status != want.Status || got.Iterations != want.Iterations || got.Dual != want.Dual || got.Primal != want.Primal) {
			t.Fatalf("rejected (%v), yet %v after %d, dual %v primal %v; undisturbed %v after %d, dual %v primal %v",
				reasons, got.Status, got.Iterations, got.Dual, got.Primal, want.Status, want.Iterations, want.Dual, want.Primal)
		}
	})
}
