package elim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// fn is a function of a plan: an original table (a factor's, or a
// variable's unaries) or a message of a (mini-)bucket.
type fn struct {
	t table // scope; vals nil until built or computed
	// For a message: the variable maxed out and the functions summed.
	elim    int32
	members []int32
	msg     bool
}

// plan is a (mini-)bucket elimination scheme on one model along one
// order: which function goes in which bucket, and the messages, their
// scopes first (the estimates) and their values once computed.
type plan struct {
	m     *model.Model
	cards []int
	order []int32
	pos   []int32 // pos[v]: v's place in order
	fns   []fn
	// bucket[p]: the functions in the bucket of order[p] (originals
	// and messages received); out[p]: the messages it sends.
	bucket [][]int32
	out    [][]int32
	// roots are the messages over no variable: with the constant, their
	// sum is the bound.
	roots []int32
	// limit is the log2 of the largest mini-bucket (its variable
	// included); +Inf for exact elimination.
	limit float64
	// exact: no bucket was split (the bound is the optimum).
	exact bool
	// entries of all messages, entries of the expanded originals, and
	// the work: entries visited to compute the messages.
	entries, expanded, work float64
	maxLog2                 float64
	split                   int // buckets split into several mini-buckets
}

// bytesPerEntry is what one table entry costs.
const bytesPerEntry = 8

// bytes is the memory the plan's tables take.
func (p *plan) bytes() float64 { return bytesPerEntry * (p.entries + p.expanded) }

// newPlan places m's functions along order and works out the messages'
// scopes with mini-buckets of at most 2^limit entries (+Inf: exact). It
// allocates no table.
func newPlan(m *model.Model, order []int32, limit float64) *plan {
	n := m.NumVars()
	p := &plan{m: m, cards: m.Cards, order: order, pos: make([]int32, n), limit: limit, exact: true,
		bucket: make([][]int32, n), out: make([][]int32, n)}
	for i, v := range order {
		p.pos[v] = int32(i)
	}
	place := func(id int32) {
		s := p.fns[id].t.vars
		if len(s) == 0 {
			p.roots = append(p.roots, id)
			return
		}
		b := p.pos[s[0]]
		for _, v := range s[1:] {
			b = min(b, p.pos[v])
		}
		p.bucket[b] = append(p.bucket[b], id)
	}
	for v := range n {
		p.fns = append(p.fns, fn{t: table{vars: []int32{int32(v)}, strides: []int{1}}})
		place(int32(len(p.fns) - 1))
	}
	for a := range m.Factors {
		p.expanded += expandedEntries(m, a)
		for _, s := range scopes(m, a) {
			p.fns = append(p.fns, fn{t: newTable(m.Cards, s, []float64{})})
			place(int32(len(p.fns) - 1))
		}
	}
	var union []int32
	for i, v := range order {
		fs := slices.Clone(p.bucket[i])
		// Largest scopes first, each into the first mini-bucket it fits.
		slices.SortStableFunc(fs, func(a, b int32) int {
			return cmp.Compare(log2Size(p.cards, p.fns[b].t.vars), log2Size(p.cards, p.fns[a].t.vars))
		})
		var mbs [][]int32 // members
		var mscopes [][]int32
		for _, f := range fs {
			sc := p.fns[f].t.vars
			placed := false
			for k := range mbs {
				union = merge(union[:0], mscopes[k], sc)
				if log2Size(p.cards, union) <= limit {
					mbs[k] = append(mbs[k], f)
					mscopes[k] = append(mscopes[k][:0], union...)
					placed = true
					break
				}
			}
			if !placed {
				mbs = append(mbs, []int32{f})
				mscopes = append(mscopes, merge(nil, nil, sc))
			}
		}
		if len(mbs) > 1 {
			p.exact = false
			p.split++
		}
		for k, members := range mbs {
			full := mscopes[k]
			p.work += math.Exp2(log2Size(p.cards, full)) * float64(len(members))
			scope := slices.DeleteFunc(slices.Clone(full), func(u int32) bool { return u == v })
			lg := log2Size(p.cards, scope)
			p.entries += math.Exp2(lg)
			p.maxLog2 = max(p.maxLog2, lg)
			p.fns = append(p.fns, fn{t: table{vars: scope}, elim: v, members: members, msg: true})
			id := int32(len(p.fns) - 1)
			p.out[i] = append(p.out[i], id)
			place(id)
		}
	}
	return p
}

// merge returns the sorted union of the sorted-or-not scopes a and b in
// dst (sorted ascending).
func merge(dst, a, b []int32) []int32 {
	dst = append(append(dst, a...), b...)
	slices.Sort(dst)
	return slices.Compact(dst)
}

// build fills the original functions' values (expanding non-dense
// factors) and the strides of every function.
func (p *plan) build() error {
	m := p.m
	id := 0
	for v := range m.NumVars() {
		p.fns[id].t = newTable(p.cards, p.fns[id].t.vars, m.Unaries(v))
		id++
	}
	for a := range m.Factors {
		ts, err := tables(m, a)
		if err != nil {
			return err
		}
		for _, t := range ts {
			p.fns[id].t = t
			id++
		}
	}
	return nil
}

// compute computes every message, bucket by bucket; ctx is checked every
// million entries or so.
func (p *plan) compute(ctx context.Context) error {
	k := kernel{}
	for i := range p.order {
		for _, id := range p.out[i] {
			if err := k.message(ctx, p, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// bound is the plan's bound on the MAP score of its model: the constant
// plus the messages over no variable (the MAP score when exact).
func (p *plan) bound() float64 {
	b := p.m.Constant
	for _, id := range p.roots {
		b += p.fns[id].t.vals[0]
	}
	return b
}

// kernel holds the scratch of message computations.
type kernel struct {
	idx    []int
	digits []int
	cards  []int
	sv     []int
	su     []int // su[k*nf+j]: stride of the k-th output variable in member j
	back   []int // back[k*nf+j]: su * (card-1)
	vals   [][]float64
	acc    []float64
}

// message computes message id: for every assignment of its scope, the
// largest (over its variable) sum of its members.
func (k *kernel) message(ctx context.Context, p *plan, id int32) error {
	f := &p.fns[id]
	v := f.elim
	cv := p.cards[v]
	nf := len(f.members)
	f.t = newTable(p.cards, f.t.vars, nil)
	out := f.t.vals
	u := f.t.vars
	nu := len(u)
	k.idx = resize(k.idx, nf)
	k.sv = resize(k.sv, nf)
	k.digits = resize(k.digits, nu)
	k.cards = resize(k.cards, nu)
	k.su = resize(k.su, nu*nf)
	k.back = resize(k.back, nu*nf)
	k.acc = slices.Grow(k.acc[:0], cv)[:cv]
	k.vals = k.vals[:0]
	clear(k.idx)
	clear(k.digits)
	clear(k.sv)
	clear(k.su)
	for j, g := range f.members {
		t := &p.fns[g].t
		k.vals = append(k.vals, t.vals)
		for q, w := range t.vars {
			if w == v {
				k.sv[j] = t.strides[q]
				continue
			}
			kk, ok := slices.BinarySearch(u, w)
			if !ok {
				return fmt.Errorf("elim: message of variable %d: member %d has variable %d outside the scope", v, g, w)
			}
			k.su[kk*nf+j] = t.strides[q]
		}
	}
	for q := range nu {
		k.cards[q] = p.cards[u[q]]
		for j := range nf {
			k.back[q*nf+j] = k.su[q*nf+j] * (k.cards[q] - 1)
		}
	}
	acc, idx, sv, vals := k.acc, k.idx, k.sv, k.vals
	// Rows along the last variable of the scope (one entry when the
	// scope is empty): within a row, member j's index moves by last[j].
	rowLen, last := 1, k.back[:0]
	if nu > 0 {
		rowLen, last = k.cards[nu-1], k.su[(nu-1)*nf:nu*nf]
	}
	check := 1 << 20
	for e := 0; e < len(out); e += rowLen {
		if check -= rowLen * cv * nf; check <= 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			check = 1 << 20
		}
		row := out[e : e+rowLen]
		for t := range row {
			if cv == 2 {
				a0, a1 := 0.0, 0.0
				for j, tv := range vals {
					b := idx[j]
					if len(last) > 0 {
						b += t * last[j]
					}
					a0 += tv[b]
					a1 += tv[b+sv[j]]
				}
				if a1 > a0 {
					a0 = a1
				}
				row[t] = a0
				continue
			}
			// Sum the members over the variable's states, then max.
			for s := range acc {
				acc[s] = 0
			}
			for j, tv := range vals {
				base, step := idx[j], sv[j]
				if len(last) > 0 {
					base += t * last[j]
				}
				for s := range acc {
					acc[s] += tv[base+s*step]
				}
			}
			best := acc[0]
			for _, a := range acc[1:] {
				if a > best {
					best = a
				}
			}
			row[t] = best
		}
		// Next row: the scope's other variables, the last but one fastest.
		for q := nu - 2; q >= 0; q-- {
			r := q * nf
			if k.digits[q]++; k.digits[q] < k.cards[q] {
				for j := range nf {
					idx[j] += k.su[r+j]
				}
				break
			}
			k.digits[q] = 0
			for j := range nf {
				idx[j] -= k.back[r+j]
			}
		}
	}
	return nil
}

func resize(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}
