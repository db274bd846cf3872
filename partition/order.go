package partition

import "fmt"

// Scopes is the structure of a factor graph in flat slices: factor a is
// over the variables Vars[Off[a]:Off[a+1]] (len(Off) is the number of
// factors plus one), each in [0, NumVars).
type Scopes struct {
	NumVars int
	Off     []int64
	Vars    []int32
}

// BreadthFirst orders the factors of a factor graph so that every prefix
// of the order is a connected region with a short frontier: cut into K
// consecutive ranges (the plan of a sharded run, package shard), the
// ranges share few variables. It is the Cuthill-McKee idea on the
// variables (Cuthill and McKee 1969; George and Liu 1979 for the start):
// within each connected component a breadth-first search from a
// pseudo-peripheral variable (the last one reached by a first search from
// the component's lowest variable), and each factor placed when the last
// of its variables is visited, so that the order follows the search's
// wavefront. On a W x H grid it gives anti-diagonal bands whose frontier
// is at most min(W, H) variables, the frontier of the row order, whatever
// order the factors came in.
//
// It keeps 4 bytes per scope entry (the variables' factor lists), 8 per
// variable and 8 per factor besides the input; factors over no variable go
// first; a variable repeated in a scope is fine. The result is a permutation of the factor numbers: order[i] is
// the factor placed i-th.
func BreadthFirst(s Scopes) ([]int32, error) {
	nf := len(s.Off) - 1
	if nf < 0 || s.Off[0] != 0 || s.Off[nf] != int64(len(s.Vars)) {
		return nil, fmt.Errorf("partition: scope offsets do not match %d scope entries", len(s.Vars))
	}
	if int64(nf) > 1<<31-1 || s.NumVars > 1<<31-1 {
		return nil, fmt.Errorf("partition: %d factors over %d variables: too many to order", nf, s.NumVars)
	}
	n := s.NumVars
	// The variables' factor lists (CSR), and each factor's variables left
	// to visit.
	voff := make([]int64, n+1)
	left := make([]int32, nf)
	order := make([]int32, 0, nf)
	for a := 0; a < nf; a++ {
		if s.Off[a+1] < s.Off[a] {
			return nil, fmt.Errorf("partition: factor %d: scope offsets decrease", a)
		}
		left[a] = int32(s.Off[a+1] - s.Off[a])
		if left[a] == 0 {
			order = append(order, int32(a))
		}
		for _, v := range s.Vars[s.Off[a]:s.Off[a+1]] {
			if v < 0 || int(v) >= n {
				return nil, fmt.Errorf("partition: factor %d: variable %d out of range [0,%d)", a, v, n)
			}
			voff[v+1]++
		}
	}
	for v := 0; v < n; v++ {
		voff[v+1] += voff[v]
	}
	vfac := make([]int32, len(s.Vars))
	fill := make([]int64, n)
	copy(fill, voff[:n])
	for a := 0; a < nf; a++ {
		for _, v := range s.Vars[s.Off[a]:s.Off[a+1]] {
			vfac[fill[v]] = int32(a)
			fill[v]++
		}
	}
	fill = nil
	// mark[v]: the last search that reached v (0: none); the final search
	// of a component has a negative mark.
	mark := make([]int32, n)
	queue := make([]int32, 0, n)
	bfs := func(start int32, id int32, visit func(v int32)) int32 {
		queue = append(queue[:0], start)
		mark[start] = id
		for i := 0; i < len(queue); i++ {
			v := queue[i]
			if visit != nil {
				visit(v)
			}
			for _, a := range vfac[voff[v]:voff[v+1]] {
				for _, u := range s.Vars[s.Off[a]:s.Off[a+1]] {
					if mark[u] != id && mark[u] >= 0 {
						mark[u] = id
						queue = append(queue, u)
					}
				}
			}
		}
		return queue[len(queue)-1]
	}
	place := func(v int32) {
		for _, a := range vfac[voff[v]:voff[v+1]] {
			if left[a]--; left[a] == 0 {
				order = append(order, a)
			}
		}
	}
	id := int32(0)
	for v := 0; v < n; v++ {
		if mark[v] < 0 {
			continue
		}
		id++
		far := bfs(int32(v), id, nil)
		bfs(far, -id, place)
	}
	if len(order) != nf {
		return nil, fmt.Errorf("partition: internal error: %d of %d factors placed", len(order), nf)
	}
	return order, nil
}
