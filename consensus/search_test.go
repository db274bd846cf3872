package consensus

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// seqICM is the sequential worklist ICM over the whole model (what icm
// does within one block).
func seqICM(m *model.Model, x []int, sweeps int) {
	n := m.NumVars()
	facs := make([][]int, n)
	for a := range m.Factors {
		for _, v := range m.Factors[a].Vars {
			facs[v] = append(facs[v], a)
		}
	}
	queued := make([]bool, n)
	var q []int
	for i := 0; i < n; i++ {
		q = append(q, i)
		queued[i] = true
	}
	for visits := 0; len(q) > 0 && visits < sweeps*n; visits++ {
		i := q[0]
		q = q[1:]
		queued[i] = false
		if m.Cards[i] == 1 {
			continue
		}
		loc := append([]float64(nil), m.Unaries(i)...)
		orig := x[i]
		for _, a := range facs[i] {
			for st := range loc {
				if !math.IsInf(loc[st], -1) {
					x[i] = st
					loc[st] += m.FactorScore(a, x)
				}
			}
			x[i] = orig
		}
		best := orig
		for st, v := range loc {
			if v > loc[best] {
				best = st
			}
		}
		x[i] = best
		if best == orig {
			continue
		}
		for _, a := range facs[i] {
			for _, v := range m.Factors[a].Vars {
				if v != i && !queued[v] {
					queued[v] = true
					q = append(q, v)
				}
			}
		}
	}
}

func randomAssignment(m *model.Model, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]int, m.NumVars())
	for i, c := range m.Cards {
		x[i] = rng.IntN(c)
	}
	return x
}

// The ICM runs blocks of variables in parallel; the assignment it returns,
// and the score, must not depend on the number of threads, and it never
// lowers the score.
func TestLocalSearchSameForAnyThreads(t *testing.T) {
	models := []namedModel{
		{"potts", generate.Potts(generate.GridOptions{Height: 70, Width: 70, Labels: 5, Rho: 1, Seed: 2})},
		{"ising", generate.Ising(generate.GridOptions{Height: 50, Width: 60, Rho: 1, Seed: 3})},
		{"logic", generate.Logic(generate.LogicOptions{Vars: 3000, Factors: 1500, Couplings: 3000, MaxArity: 6, Rho: 1, Seed: 4})},
	}
	for _, c := range models {
		t.Run(c.name, func(t *testing.T) {
			if c.m.NumVars() <= 2*icmBlock {
				t.Fatalf("%d variables: too few blocks to test", c.m.NumVars())
			}
			var want, wantPolished []int
			var wantScore float64
			for _, th := range []int{1, 2, 3, 5} {
				pl := newPool(th)
				ls := newLocalSearch(c.m, pl)
				x := randomAssignment(c.m, 7)
				before := c.m.Score(x)
				ls.improve(x, false)
				after := c.m.Score(x)
				if !math.IsInf(before, -1) && after < before-1e-9*math.Abs(before) {
					t.Errorf("threads %d: ICM lowered the score from %v to %v", th, before, after)
				}
				sc := ls.score(x)
				if !relClose(sc, after, 1e-12) && !(math.IsInf(sc, -1) && math.IsInf(after, -1)) {
					t.Errorf("threads %d: score %v, Model.Score %v", th, sc, after)
				}
				polished := slices.Clone(x)
				ls.polish(polished)
				pl.close()
				if slices.Contains(ls.queued, true) {
					t.Errorf("threads %d: a variable is still marked queued after the ICM", th)
				}
				if want == nil {
					want, wantPolished, wantScore = x, polished, sc
					continue
				}
				if !slices.Equal(x, want) || !slices.Equal(polished, wantPolished) || sc != wantScore {
					t.Errorf("threads %d: ICM gives another assignment than with one thread", th)
				}
			}
		})
	}
}

// A model of one block gets exactly the sequential ICM.
func TestLocalSearchOneBlockIsSequential(t *testing.T) {
	for seed := range 5 {
		m := generate.Potts(generate.GridOptions{Height: 20, Width: 25, Labels: 4, Rho: 2, Seed: int64(seed)})
		if m.NumVars() > icmBlock {
			t.Fatal("more than one block")
		}
		for _, sweeps := range []int{1, icmRunSweeps, icmFinalSweeps} {
			want := randomAssignment(m, uint64(seed))
			got := slices.Clone(want)
			seqICM(m, want, sweeps)
			pl := newPool(2)
			newLocalSearch(m, pl).icm(got, sweeps)
			pl.close()
			if !slices.Equal(got, want) {
				t.Errorf("seed %d, %d sweeps: the one-block ICM differs from the sequential one", seed, sweeps)
			}
		}
	}
}

// Colouring: blocks of one colour share no factor.
func TestICMBlockColours(t *testing.T) {
	for _, m := range []*model.Model{
		generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 2, Rho: 1, Seed: 1}),
		generate.Logic(generate.LogicOptions{Vars: 5000, Factors: 2000, Couplings: 2000, MaxArity: 5, Rho: 1, Seed: 4}),
	} {
		pl := newPool(1)
		ls := newLocalSearch(m, pl)
		pl.close()
		colour := make([]int, (m.NumVars()+icmBlock-1)/icmBlock)
		for c := 0; c+1 < len(ls.colOff); c++ {
			for _, b := range ls.colBlocks[ls.colOff[c]:ls.colOff[c+1]] {
				colour[b] = c
			}
		}
		for a := range m.Factors {
			vs := m.Factors[a].Vars
			for _, u := range vs {
				for _, v := range vs {
					if bu, bv := u/icmBlock, v/icmBlock; bu != bv && colour[bu] == colour[bv] {
						t.Fatalf("factor %d joins blocks %d and %d of colour %d", a, bu, bv, colour[bu])
					}
				}
			}
		}
		t.Logf("%d variables: %d blocks, %d colours", m.NumVars(), len(colour), len(ls.colOff)-1)
	}
}

// icmNear from a local optimum whose frozen variables then changed makes
// icm's moves (the visits it skips cannot move a variable), on several
// blocks and thread counts, over a model's factors and over flat pairs,
// budget cut-offs included; and icm reports a local optimum only when it
// ended at one.
func TestICMNearSameAsICM(t *testing.T) {
	potts := generate.Potts(generate.GridOptions{Height: 60, Width: 70, Labels: 4, Rho: 1, Seed: 5})
	q := &Pairs{Kind: model.Potts}
	for a := range potts.Factors {
		f := &potts.Factors[a]
		q.I, q.J, q.W = append(q.I, int32(f.Vars[0])), append(q.J, int32(f.Vars[1])), append(q.W, f.Weight)
	}
	vars := &model.Model{Cards: potts.Cards, UnaryOff: potts.UnaryOff, Unary: potts.Unary}
	p, err := decomposePairs(vars, q)
	if err != nil {
		t.Fatal(err)
	}
	logic := generate.Logic(generate.LogicOptions{Vars: 3000, Factors: 1500, Couplings: 3000, MaxArity: 4, Rho: 1, Seed: 4})
	for _, th := range []int{1, 3} {
		pl := newPool(th)
		searches := map[string]*localSearch{"potts": newLocalSearch(potts, pl), "pairs": newPairSearch(vars, q, p, pl), "logic": newLocalSearch(logic, pl)}
		for name, ls := range searches {
			m := ls.m
			rng := rand.New(rand.NewPCG(uint64(th), 9))
			ls.frozen = make([]bool, m.NumVars())
			for i := range ls.frozen {
				ls.frozen[i] = rng.IntN(10) == 0
			}
			x := randomAssignment(m, 3)
			if !ls.icm(x, icmFinalSweeps) {
				t.Fatalf("%s: ICM did not end at a local optimum in %d sweeps", name, icmFinalSweeps)
			}
			for _, sweeps := range []int{1, icmRunSweeps, icmFinalSweeps} {
				y := slices.Clone(x)
				var changed []int
				for i, f := range ls.frozen {
					if f && m.Cards[i] > 1 && rng.IntN(2) == 0 {
						y[i] = (y[i] + 1 + rng.IntN(m.Cards[i]-1)) % m.Cards[i]
						changed = append(changed, i)
					}
				}
				want, got := slices.Clone(y), slices.Clone(y)
				wantDone := ls.icm(want, sweeps)
				gotDone := ls.icmNear(got, sweeps, changed)
				if !slices.Equal(got, want) || gotDone != wantDone {
					t.Fatalf("%s, %d threads, %d sweeps: icmNear after %d changes differs from icm (local optimum %v, icm's %v)", name, th, sweeps, len(changed), gotDone, wantDone)
				}
				if slices.Contains(ls.queued, true) {
					t.Fatalf("%s: a variable is still marked queued after icmNear", name)
				}
				if slices.Equal(want, y) {
					t.Fatalf("%s, %d sweeps: the changes moved nothing: nothing tested", name, sweeps)
				}
			}
		}
		pl.close()
	}
}
