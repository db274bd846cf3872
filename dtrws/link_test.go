package dtrws

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/solver"
)

// countingLink wraps a part, checks the flat slices' shapes and fails on
// the step fail (0: never).
type countingLink struct {
	Link
	t            *testing.T
	steps, fail  int
	width, count int
}

func (c *countingLink) Step(ctx context.Context, in *StepIn, out *StepOut) error {
	c.steps++
	if c.steps == c.fail {
		return errors.New("worker lost")
	}
	if in.Delta != nil && len(in.Delta) != c.width {
		c.t.Errorf("delta of %d entries, want %d", len(in.Delta), c.width)
	}
	err := c.Link.Step(ctx, in, out)
	if in.Iters > 0 && (len(out.Beliefs) != c.width || len(out.Chains) != c.count) {
		c.t.Errorf("%d beliefs and %d chain counts, want %d and %d", len(out.Beliefs), len(out.Chains), c.width, c.count)
	}
	return err
}

// countingLinks splits m into parts counting links, the odd parts failing
// on their step fail (0: never).
func countingLinks(t *testing.T, m *model.Model, parts, fail int) (*Split, []Link, []*countingLink) {
	t.Helper()
	sp, err := NewSplit(m, parts)
	if err != nil {
		t.Fatal(err)
	}
	links, counts := make([]Link, parts), make([]*countingLink, parts)
	for p := range links {
		b := sp.BoundaryOf(p)
		l, err := NewLocalLink(sp.Models[p], b)
		if err != nil {
			t.Fatal(err)
		}
		width := 0
		for _, v := range b {
			width += sp.Models[p].Cards[v]
		}
		counts[p] = &countingLink{Link: l, t: t, width: width, count: len(b), fail: fail * (p % 2)}
		links[p] = counts[p]
	}
	return sp, links, counts
}

// TestRunThroughLinks: Run drives any Link; a part's error stops it with
// the part named, and the same links give Solve's result.
func TestRunThroughLinks(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 6, Width: 7, Labels: 3, Rho: 0.5, Seed: 2})
	o := testOpts(3, 25)
	want, err := Solve(context.Background(), m, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []int{0, 4} {
		sp, links, _ := countingLinks(t, m, 3, fail)
		res, err := Run(context.Background(), sp.Seam(m), links, o, time.Now(), nil)
		if err == nil {
			res.Assignment, err = sp.Gather(context.Background(), links, res)
		}
		if fail != 0 {
			if err == nil {
				t.Error("a failing part did not stop the run")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The parts' scores add up to the assignment's score on m.
		if sc := m.Score(res.Assignment); math.Abs(sc-res.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
			t.Errorf("the parts scored %v, the assignment scores %v", res.Primal, sc)
		}
		res.Primal = m.Score(res.Assignment)
		if res.Dual != want.Dual || res.Primal != want.Primal || res.Iterations != want.Iterations || !slices.Equal(res.Assignment, want.Assignment) {
			t.Errorf("through links: dual %v primal %v after %d, Solve %v %v", res.Dual, res.Primal, res.Iterations, want.Dual, want.Primal)
		}
	}
	if _, err := Run(context.Background(), &Seam{Parts: 2}, nil, o, time.Now(), nil); err == nil {
		t.Error("2 parts and no links accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Solve(ctx, m, nil, o, nil)
	if err != nil || res.Status != solver.Interrupted {
		t.Errorf("cancelled run: %v, %v", res.Status, err)
	}
}

// The final polish's moves start only before their deadline
// (solver.PolishDeadline): past it, the polish stops after its first
// evaluation (the primal then no better than with the moves).
func TestPolishDeadline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 3})
	o := testOpts(3, 4)
	finish := func(deadline time.Time) (steps int, primal float64) {
		sp, links, counts := countingLinks(t, m, 3, 0)
		c := newCoord(sp.Seam(m), links, o)
		res := solver.Result{Primal: math.Inf(-1)}
		for range o.MaxIter {
			for p := range c.ins {
				c.ins[p].Iters, c.ins[p].Sweeps = o.Inner, o.Sweeps
			}
			evaluated := c.hasCand
			c.setStates(c.cand, c.hasCand)
			if err := c.step(context.Background()); err != nil {
				t.Fatal(err)
			}
			if evaluated {
				c.scored(&res)
			}
			c.decode(true)
			c.updateMultipliers(o.Step)
		}
		before := counts[0].steps
		if err := c.finish(context.Background(), &res, deadline, func() time.Time { return t0 }); err != nil {
			t.Fatal(err)
		}
		return counts[0].steps - before, res.Primal
	}
	fullSteps, fullPrimal := finish(t0.Add(time.Hour))
	cutSteps, cutPrimal := finish(t0.Add(-time.Second))
	// Cut: the last candidate's evaluation, the polish from the best and
	// the order that keeps it, no move.
	if cutSteps > 3 || fullSteps <= cutSteps {
		t.Errorf("the polish ran %d steps past its deadline and %d before it: want at most 3, and more before", cutSteps, fullSteps)
	}
	if cutPrimal > fullPrimal {
		t.Errorf("the moves lowered the primal from %v to %v", cutPrimal, fullPrimal)
	}
}
