package consensus

import (
	"math"
	"slices"
)

// forbidden is the score given to excluded states when asking a slave's MAP
// oracle whether a partial assignment can be completed; a MAP value below
// forbidden/2 means it cannot.
const forbidden = -1e30

// repair builds a feasible assignment when the decoded one violates hard
// constraints: a depth-first search fixes variables one at a time, most
// confident first (largest max_s mu_i(s)), trying states in order of mu and
// keeping a state only if every slave touching the variable can still be
// completed (forward checking with the slaves' MAP oracles); a dead end
// backtracks. The search has a budget of checks; when it runs out, x keeps
// the decoded states of the variables not reached and its score stays -Inf.
type repair struct {
	p        *Problem
	order    []int
	conf     []float64
	assigned []bool
	states   []int // per position in order: the states by decreasing mu
	tried    []int // per position: how many of its states were tried
	w        []float64
	y        []int
}

func newRepair(p *Problem) *repair {
	maxRep := 0
	for s := range p.Slaves {
		maxRep = max(maxRep, p.RepOff[s+1]-p.RepOff[s])
	}
	n := len(p.Model.Cards)
	return &repair{p: p, order: make([]int, n), conf: make([]float64, n), assigned: make([]bool, n),
		states: make([]int, len(p.Model.Unary)), tried: make([]int, n),
		w: make([]float64, maxRep), y: make([]int, p.maxScope())}
}

// run overwrites x with a repaired assignment guided by the marginals mu and
// reports whether the search completed.
func (r *repair) run(x []int, mu []float64) bool {
	m := r.p.Model
	n := len(m.Cards)
	for i := range r.order {
		r.order[i] = i
		mx := 0.0
		for _, v := range mu[m.UnaryOff[i]:m.UnaryOff[i+1]] {
			mx = math.Max(mx, v)
		}
		r.conf[i] = mx
		r.assigned[i] = false
	}
	r.growOrder()
	// States of each variable by decreasing mu, ties by the unary.
	for i := 0; i < n; i++ {
		mi := mu[m.UnaryOff[i]:m.UnaryOff[i+1]]
		th := m.Unaries(i)
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		for k := range st {
			st[k] = k
		}
		slices.SortStableFunc(st, func(a, b int) int {
			switch {
			case mi[a] > mi[b] || (mi[a] == mi[b] && th[a] > th[b]):
				return -1
			case mi[a] < mi[b] || (mi[a] == mi[b] && th[a] < th[b]):
				return 1
			}
			return 0
		})
	}
	budget := 50*n + 10000
	pos := 0
	r.tried[0] = 0
	for pos < n {
		i := r.order[pos]
		st := r.states[m.UnaryOff[i]:m.UnaryOff[i+1]]
		found := false
		for r.tried[pos] < len(st) && budget > 0 {
			s := st[r.tried[pos]]
			r.tried[pos]++
			budget--
			if r.completable(i, s, x) {
				x[i] = s
				r.assigned[i] = true
				found = true
				break
			}
		}
		switch {
		case found:
			pos++
			if pos < n {
				r.tried[pos] = 0
			}
		case budget <= 0 || pos == 0:
			return false
		default: // dead end: undo the previous choice and try its next state
			pos--
			r.assigned[r.order[pos]] = false
		}
	}
	return true
}

// completable reports whether every slave touching variable i can still be
// satisfied with x_i = s and the variables assigned so far.
func (r *repair) completable(i, s int, x []int) bool {
	p, m := r.p, r.p.Model
	for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
		a := p.RepSlave[j]
		w := r.w[:p.RepOff[a+1]-p.RepOff[a]]
		off := 0
		for _, v := range p.Scope(a) {
			c := m.Cards[v]
			fixed := -1
			if v == i {
				fixed = s
			} else if r.assigned[v] {
				fixed = x[v]
			}
			for k := 0; k < c; k++ {
				w[off+k] = 0
				if fixed >= 0 && k != fixed {
					w[off+k] = forbidden
				}
			}
			off += c
		}
		if p.Slaves[a].MAP(w, r.y) < forbidden/2 {
			return false
		}
	}
	return true
}

// growOrder orders the variables like Prim's algorithm on the factor graph:
// start from the most confident variable, then always take the most
// confident variable adjacent to those already ordered (a new component
// starts from the most confident remaining one). Neighbours come soon after
// each other, so a conflict shows up, and is undone, close to its cause.
func (r *repair) growOrder() {
	p := r.p
	n := len(r.conf)
	byConf := make([]int, n)
	for i := range byConf {
		byConf[i] = i
	}
	slices.SortStableFunc(byConf, func(a, b int) int { return cmpDesc(r.conf[a], r.conf[b]) })
	in := make([]bool, n)
	h := &confHeap{conf: r.conf}
	k, next := 0, 0
	for k < n {
		if len(h.items) == 0 {
			for in[byConf[next]] {
				next++
			}
			h.push(byConf[next])
			in[byConf[next]] = true
		}
		i := h.pop()
		r.order[k] = i
		k++
		for j := p.VarRepOff[i]; j < p.VarRepOff[i+1]; j++ {
			for _, v := range p.Scope(p.RepSlave[j]) {
				if !in[v] {
					in[v] = true
					h.push(v)
				}
			}
		}
	}
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// confHeap is a max-heap of variables by confidence, ties by index.
type confHeap struct {
	conf  []float64
	items []int
}

func (h *confHeap) less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	return h.conf[x] > h.conf[y] || (h.conf[x] == h.conf[y] && x < y)
}

func (h *confHeap) push(v int) {
	h.items = append(h.items, v)
	for c := len(h.items) - 1; c > 0; {
		par := (c - 1) / 2
		if !h.less(c, par) {
			break
		}
		h.items[c], h.items[par] = h.items[par], h.items[c]
		c = par
	}
}

func (h *confHeap) pop() int {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for c := 0; ; {
		l, best := 2*c+1, c
		if l < last && h.less(l, best) {
			best = l
		}
		if l+1 < last && h.less(l+1, best) {
			best = l + 1
		}
		if best == c {
			break
		}
		h.items[c], h.items[best] = h.items[best], h.items[c]
		c = best
	}
	return top
}
