package shard

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The candidates are the variables inside two spans or more, as disjoint
// increasing spans, and none past the limit.
func TestCandidates(t *testing.T) {
	for _, c := range []struct {
		hulls []span
		limit int
		want  []span
		ok    bool
	}{
		{[]span{{0, 10}}, 100, nil, true},
		{[]span{{0, 10}, {11, 20}}, 100, nil, true},
		{[]span{{0, 10}, {10, 20}}, 100, []span{{10, 10}}, true},
		{[]span{{0, 10}, {5, 20}, {15, 30}}, 100, []span{{5, 10}, {15, 20}}, true},
		{[]span{{0, 30}, {5, 20}, {15, 25}}, 100, []span{{5, 25}}, true},
		{[]span{{0, 30}, {5, 20}, {15, 25}}, 20, nil, false},
		{[]span{{0, 30}, {5, 20}, {15, 25}}, 21, []span{{5, 25}}, true},
		{[]span{{3, 3}, {3, 3}, {3, 3}}, 1, []span{{3, 3}}, true},
		{[]span{{0, 9}, {0, 9}, {20, 29}, {25, 40}}, 100, []span{{0, 9}, {25, 29}}, true},
	} {
		got, ok := candidates(c.hulls, c.limit)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("candidates(%v, %d) = %v, %v; want %v, %v", c.hulls, c.limit, got, ok, c.want, c.ok)
		}
	}
}

// On random models whose factors hold nearby variables (a local order:
// the hulls overlap by a little, and some chunks are read again, others
// not; every other model with a few jumps far away, which widen the hulls
// they fall in), with variables in no factor, the hulls' pass finds what
// the two walks found, for 1 to 5 workers, and runs on several workers
// (it does not leave every plan to the windows).
func TestOwnersByHullsLocal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ran := 0
	for trial := range 8 {
		n := 2000 + r.IntN(20000)
		m := randomCards(r, n)
		for v := 0; v+60 < n; v += 1 + r.IntN(3) {
			vs := []int{v, v + 1 + r.IntN(50)}
			if r.IntN(7) == 0 {
				vs = append(vs, v+51+r.IntN(9))
			}
			if trial%2 == 1 && r.IntN(2000) == 0 { // a jump
				vs[1] = r.IntN(n)
			}
			addDense(r, m, vs)
		}
		path := writeDDX(t, m)
		for _, workers := range []int{1, 2, 3, 5} {
			if _, hulls := ownersBoth(t, path, workers, 0, fmt.Sprintf("trial %d", trial)); hulls && workers > 1 {
				ran++
			}
		}
	}
	t.Logf("the hulls' pass ran on %d of 24 plans for several workers", ran)
	if ran < 12 {
		t.Fatalf("the hulls' pass ran on %d of 24 plans for several workers: the test hardly tests it", ran)
	}
}
