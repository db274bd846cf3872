package shard

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
)

// The two ways partVars numbers a part's variables (marks over their span,
// or sorting) give the same variables, numbers and errors, the marks read
// from the scopes of factors or of flat pairs alike.
func TestDenseNumberingMatchesSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for trial := range 2000 {
		n := 1 + r.IntN(40)
		var scope []int
		var factors []model.Factor
		q := &consensus.Pairs{Kind: model.Potts}
		for range r.IntN(15) {
			u, v := r.IntN(n), r.IntN(n)
			scope = append(scope, u, v)
			factors = append(factors, model.Factor{Kind: model.Potts, Vars: []int{u, v}})
			q.I, q.J, q.W = append(q.I, int32(u)), append(q.J, int32(v)), append(q.W, 1)
		}
		spec := &Spec{NumVars: n}
		for v := range n {
			switch r.IntN(6) {
			case 0:
				spec.Boundary = append(spec.Boundary, int64(v))
			case 1:
				spec.Isolated = append(spec.Isolated, int64(v))
			}
		}
		if r.IntN(10) == 0 && len(spec.Isolated) > 0 {
			spec.Isolated[0] = int64(n) // out of range
		}
		lo, hi := math.MaxInt, -1
		for _, v := range scope {
			lo, hi = min(lo, v), max(hi, v)
		}
		for _, sc := range []scopes{{factors: factors}, {q: q}} {
			if l, h, e := sc.span(); l != lo || h != hi || e != len(scope) {
				t.Fatalf("trial %d: span [%d,%d] of %d entries, want [%d,%d] of %d", trial, l, h, e, lo, hi, len(scope))
			}
		}
		for _, v := range spec.Isolated {
			lo, hi = min(lo, int(v)), max(hi, int(v))
		}
		if hi < 0 || spec.Isolated != nil && spec.Isolated[0] >= int64(n) {
			continue // partVars refuses these before choosing
		}
		want, werr := sortedVars(slices.Clone(scope), spec)
		for _, sc := range []scopes{{factors: factors}, {q: q}} {
			if vs := sc.vars(0); !slices.Equal(vs, scope) {
				t.Fatalf("trial %d: scope variables %v, want %v", trial, vs, scope)
			}
			got, gerr := denseVars(sc, lo, hi-lo+1, spec)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("trial %d: errors %v (sorted) and %v (dense)", trial, werr, gerr)
			}
			if werr != nil {
				continue
			}
			if !slices.Equal(want.vars, got.vars) {
				t.Fatalf("trial %d: variables %v (sorted) and %v (dense)", trial, want.vars, got.vars)
			}
			for k, v := range want.vars {
				if want.local(v) != k || got.local(v) != k {
					t.Fatalf("trial %d: variable %d numbered %d (sorted) and %d (dense), want %d", trial, v, want.local(v), got.local(v), k)
				}
			}
		}
	}
}
