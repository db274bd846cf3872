package elim

import (
	"context"
	"math"
	"time"
)

// search is the depth-first branch and bound along the reverse order of a
// computed plan (BB-MBE): depth d assigns order[n-1-d]; a node's bound is
// its parent's, less the messages its bucket sends (now replaced by the
// exact terms), plus its bucket's functions at the node's state.
type search struct {
	p       *plan
	n       int
	maxCard int
	x       []int
	// Per depth: the children (states and bounds, best first), how many
	// and the next one to try.
	childS []int32
	childF []float64
	nchild []int
	next   []int
	vals   []float64

	tol      float64
	inc      float64 // the incumbent's score on the plan's model
	incX     []int
	pruneMax float64 // the largest bound pruned within the tolerance only
	nodes    int
	// stopped: a limit or ctx ended the search before it completed.
	stopped bool
}

func newSearch(p *plan, tol float64) *search {
	n := len(p.order)
	s := &search{p: p, n: n, x: make([]int, p.m.NumVars()), nchild: make([]int, n), next: make([]int, n),
		tol: tol, inc: math.Inf(-1), pruneMax: math.Inf(-1)}
	s.maxCard = 1
	for _, c := range p.cards {
		s.maxCard = max(s.maxCard, c)
	}
	s.childS = make([]int32, n*s.maxCard)
	s.childF = make([]float64, n*s.maxCard)
	s.vals = make([]float64, s.maxCard)
	return s
}

// expand sets the children of the node at depth d (the later variables
// assigned in s.x) whose bound is f: every state of the variable with a
// bound above -Inf, best first.
func (s *search) expand(d int, f float64) {
	s.nodes++
	p := s.p
	q := s.n - 1 - d
	v := p.order[q]
	cv := p.cards[v]
	sent := 0.0
	for _, id := range p.out[q] {
		sent += p.fns[id].t.at(s.x)
	}
	vals := s.vals[:cv]
	clear(vals)
	for _, id := range p.bucket[q] {
		t := &p.fns[id].t
		base, sv := 0, 0
		for k, w := range t.vars {
			if w == v {
				sv = t.strides[k]
			} else {
				base += s.x[w] * t.strides[k]
			}
		}
		for st := range vals {
			vals[st] += t.vals[base+st*sv]
		}
	}
	row := d * s.maxCard
	nc := 0
	for st, val := range vals {
		b := f - sent + val
		if math.IsInf(b, -1) || math.IsNaN(b) {
			continue
		}
		// Insertion, best first.
		k := nc
		for k > 0 && s.childF[row+k-1] < b {
			s.childF[row+k], s.childS[row+k] = s.childF[row+k-1], s.childS[row+k-1]
			k--
		}
		s.childF[row+k], s.childS[row+k] = b, int32(st)
		nc++
	}
	s.nchild[d], s.next[d] = nc, 0
}

// descend follows the best child at every depth from the root: on an
// exact plan, a MAP assignment. It returns false when the root has no
// feasible child.
func (s *search) descend() bool {
	f := s.p.bound()
	if math.IsInf(f, -1) {
		return false
	}
	for d := range s.n {
		s.expand(d, f)
		if s.nchild[d] == 0 {
			return false
		}
		row := d * s.maxCard
		s.x[s.p.order[s.n-1-d]] = int(s.childS[row])
		f = s.childF[row]
	}
	s.incX = append(s.incX[:0], s.x...)
	s.inc = s.p.m.Score(s.incX)
	return true
}

// prunes reports whether a bound b cannot beat the incumbent by more than
// the tolerance.
func (s *search) prunes(b float64) bool {
	return b <= s.inc+s.tol*math.Max(1, math.Abs(s.inc))
}

// bound is the largest bound of the unexplored part of the search
// (the remaining children at every depth up to d), the incumbent, and what
// was pruned within the tolerance: a valid upper bound at any time.
func (s *search) bound(d int) float64 {
	b := max(s.inc, s.pruneMax)
	for l := 0; l <= d && l < s.n; l++ {
		if s.next[l] < s.nchild[l] {
			b = max(b, s.childF[l*s.maxCard+s.next[l]])
		}
	}
	return b
}

// run is the branch and bound from the root until it completes, ctx is
// cancelled, the deadline passes (zero: none) or the node limit is hit
// (0: none). improved is called with every better incumbent; tick about
// every 4096 nodes with the current bound.
func (s *search) run(ctx context.Context, deadline time.Time, maxNodes int, improved func(x []int, score float64), tick func(bound float64)) {
	if s.n == 0 {
		s.descend()
		return
	}
	root := s.p.bound()
	if s.prunes(root) {
		if root > s.inc {
			s.pruneMax = max(s.pruneMax, root)
		}
		return
	}
	s.expand(0, root)
	d := 0
	check := 0
	for d >= 0 {
		if check++; check >= 4096 {
			check = 0
			if ctx.Err() != nil || !deadline.IsZero() && !time.Now().Before(deadline) || maxNodes > 0 && s.nodes >= maxNodes {
				s.stopped = true
				return
			}
			if tick != nil {
				tick(s.bound(d))
			}
		}
		row := d * s.maxCard
		if s.next[d] >= s.nchild[d] {
			d--
			continue
		}
		k := s.next[d]
		b := s.childF[row+k]
		if s.prunes(b) {
			if b > s.inc {
				s.pruneMax = max(s.pruneMax, b)
			}
			s.next[d] = s.nchild[d] // the others are no better
			continue
		}
		s.next[d]++
		v := s.p.order[s.n-1-d]
		s.x[v] = int(s.childS[row+k])
		if d == s.n-1 {
			if sc := s.p.m.Score(s.x); sc > s.inc {
				s.inc = sc
				s.incX = append(s.incX[:0], s.x...)
				if improved != nil {
					improved(s.incX, sc)
				}
			}
			continue
		}
		d++
		s.expand(d, b)
	}
}
