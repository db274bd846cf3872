package shard

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The two ways partVars numbers a part's variables (marks over their span,
// or sorting) give the same variables, numbers and errors.
func TestDenseNumberingMatchesSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for trial := range 2000 {
		n := 1 + r.IntN(40)
		var scope []int
		for range r.IntN(30) {
			scope = append(scope, r.IntN(n))
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
		lo, hi := n, -1
		for _, v := range scope {
			lo, hi = min(lo, v), max(hi, v)
		}
		for _, v := range spec.Isolated {
			lo, hi = min(lo, int(v)), max(hi, int(v))
		}
		if hi < 0 || spec.Isolated != nil && spec.Isolated[0] >= int64(n) {
			continue // partVars refuses these before choosing
		}
		want, werr := sortedVars(slices.Clone(scope), spec)
		got, gerr := denseVars(slices.Clone(scope), lo, hi-lo+1, spec)
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
