package partition

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// gridScopes is the pairwise grid of w x h variables (row-major), its
// horizontal then vertical edges in row order, then shuffled by perm
// (nil: kept).
func gridScopes(w, h int, rng *rand.Rand) Scopes {
	var pairs [][2]int32
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := int32(y*w + x)
			if x+1 < w {
				pairs = append(pairs, [2]int32{v, v + 1})
			}
			if y+1 < h {
				pairs = append(pairs, [2]int32{v, v + int32(w)})
			}
		}
	}
	if rng != nil {
		rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	}
	s := Scopes{NumVars: w * h, Off: make([]int64, 0, len(pairs)+1)}
	s.Off = append(s.Off, 0)
	for _, p := range pairs {
		s.Vars = append(s.Vars, p[0], p[1])
		s.Off = append(s.Off, int64(len(s.Vars)))
	}
	return s
}

// boundary counts the variables of s that the factors of two or more of k
// consecutive ranges of order share, the ranges of about equal size (the
// shard plan's cut for equal factors).
func boundary(s Scopes, order []int32, k int) int {
	owner := make([]int32, s.NumVars)
	for i := range owner {
		owner[i] = -1
	}
	shared := 0
	nf := len(order)
	for i, a := range order {
		r := int32(i * k / nf)
		for _, v := range s.Vars[s.Off[a]:s.Off[a+1]] {
			switch owner[v] {
			case -1:
				owner[v] = r
			case r, -2:
			default:
				owner[v] = -2
				shared++
			}
		}
	}
	return shared
}

func identity(n int) []int32 {
	o := make([]int32, n)
	for i := range o {
		o[i] = int32(i)
	}
	return o
}

// The breadth-first order of a grid whose factors come in random order
// has a frontier within 1.5x of the row order's (the bar), where
// the random order itself shares almost every variable; it is a
// permutation.
func TestBreadthFirstGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ w, h, k int }{{60, 60, 2}, {60, 60, 4}, {100, 30, 4}, {30, 100, 3}} {
		rows := gridScopes(c.w, c.h, nil)
		shuf := gridScopes(c.w, c.h, rng)
		nf := len(rows.Off) - 1
		order, err := BreadthFirst(shuf)
		if err != nil {
			t.Fatal(err)
		}
		if p := slices.Clone(order); len(p) != nf {
			t.Fatalf("%d factors ordered, want %d", len(p), nf)
		} else if slices.Sort(p); !slices.Equal(p, identity(nf)) {
			t.Fatal("not a permutation")
		}
		row, random, bfs := boundary(rows, identity(nf), c.k), boundary(shuf, identity(nf), c.k), boundary(shuf, order, c.k)
		t.Logf("%dx%d grid, %d ranges: boundary %d in row order, %d shuffled, %d shuffled then breadth-first (%.2fx row order)",
			c.w, c.h, c.k, row, random, bfs, float64(bfs)/float64(row))
		if float64(bfs) > 1.5*float64(row) {
			t.Errorf("%dx%d/%d: breadth-first boundary %d, over 1.5x the row order's %d", c.w, c.h, c.k, bfs, row)
		}
		if random < 5*row {
			t.Errorf("the shuffled order's boundary %d is not much worse than the row order's %d: the test proves nothing", random, row)
		}
	}
}

// Components are ordered one after the other, factors over no variable
// first, and malformed scopes are errors.
func TestBreadthFirstComponentsAndErrors(t *testing.T) {
	// Two paths 0-1-2 and 3-4, and a constant factor.
	s := Scopes{NumVars: 5, Off: []int64{0, 2, 4, 4, 6}, Vars: []int32{3, 4, 1, 2, 0, 1}}
	order, err := BreadthFirst(s)
	if err != nil {
		t.Fatal(err)
	}
	if order[0] != 2 || len(order) != 4 {
		t.Fatalf("order %v: the constant factor 2 goes first", order)
	}
	// The path 0-1-2 (factors 3, 1) before 3-4 (factor 0): components in
	// the order of their lowest variable.
	if !slices.Equal(order[1:], []int32{3, 1, 0}) && !slices.Equal(order[1:], []int32{1, 3, 0}) {
		t.Fatalf("order %v", order)
	}
	for _, bad := range []Scopes{
		{NumVars: 2, Off: []int64{0, 3}, Vars: []int32{0, 1}},
		{NumVars: 2, Off: []int64{0, 2}, Vars: []int32{0, 2}},
		{NumVars: 2, Off: []int64{1, 2}, Vars: []int32{0, 1}},
	} {
		if _, err := BreadthFirst(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
