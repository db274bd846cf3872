package primal

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
)

// BenchmarkPropagate is the root propagation (Reset) of a constraint-heavy
// random model of 2000 variables.
func BenchmarkPropagate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := heavy(rng, 2000, 0.3)
	// Keep the dense factors, made feasible at a random assignment.
	x := make([]int, m.NumVars())
	for i, c := range m.Cards {
		x[i] = rng.IntN(c)
	}
	dense := m.Factors[:0]
	for _, f := range m.Factors {
		if f.Kind == model.Dense {
			idx := 0
			for _, v := range f.Vars {
				idx = idx*m.Cards[v] + x[v]
			}
			f.Table[idx] = 0
			dense = append(dense, f)
		}
	}
	m.Factors = dense
	p := NewPropagator(m)
	b.ReportAllocs()
	for b.Loop() {
		if !p.Reset() {
			b.Fatal("planted model infeasible")
		}
	}
}

// BenchmarkAssignUndo is one assignment with its propagation and undo, on
// the Pedigree_11 model (skipped when the instances are absent).
func BenchmarkAssignUndo(b *testing.B) {
	m, _ := oracle.Instance(b, "pedigree/Pedigree_11.uai")
	p := NewPropagator(m)
	p.Reset()
	var vars []int
	for i := range m.Cards {
		if p.Size(i) > 1 {
			vars = append(vars, i)
		}
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		v := vars[k%len(vars)]
		k++
		mark := p.Mark()
		for s := range m.Cards[v] {
			if p.Allowed(v, s) {
				p.Assign(v, s)
				break
			}
		}
		p.Undo(mark)
	}
}

// BenchmarkSearchPedigree is the construction alone, then with 100
// neighbourhoods, on Pedigree_11 under its evidence.
func BenchmarkSearchPedigree(b *testing.B) {
	m, ev := oracle.Instance(b, "pedigree/Pedigree_11.uai")
	s := NewSearcher(m)
	for _, c := range []struct {
		name string
		nb   int
	}{{"construct", -1}, {"lns100", 100}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if r := s.Run(context.Background(), nil, Options{Evidence: ev, Neighbourhoods: c.nb}); !r.OK {
					b.Fatal("no feasible assignment")
				}
			}
		})
	}
}
