package dtrws

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
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
		sp, err := NewSplit(m, 3)
		if err != nil {
			t.Fatal(err)
		}
		links := make([]Link, 3)
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
			links[p] = &countingLink{Link: l, t: t, width: width, count: len(b), fail: fail * (p % 2)}
		}
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
