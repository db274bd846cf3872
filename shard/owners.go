package shard

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/ddrun/ddrun/model"
)

// The plan's second pass (planner.owners) finds the boundary without a
// table over the variables. A file in a local order (a grid row by row,
// a breadth-first rewrite) touches a variable in a short stretch of
// factors, so the pass keeps a window: the variables touched lately, each
// with the worker that touched it last and how often (ownerTable), and
// retires the others into a set of variables seen (pageSet: a bit per
// variable, by pages of 65,536 that are dropped once every variable in
// them was seen). What it holds is the window, the pages not yet full and
// the boundary, not the variables: a few rows of a grid in row order. A
// variable touched again after it was retired has lost who touched it and
// how often: it is set aside (a suspect) and counted again, exactly, by
// one more walk over the factors, which only a file that is not in a
// local order needs (its boundary is large anyway).

// ownerGroups is the most goroutines of the second pass: the first group
// of workers is walked forwards, the second backwards, so that both end
// at the cut between them with its variables in their windows.
const ownerGroups = 2

// held is a boundary variable v that a worker's factors hold, c of them.
type held struct {
	v int
	c int32
}

// owners is the second pass: the workers whose factors hold each
// variable, from which the variables of several workers (the boundary)
// and of none (isolated), and each worker's slaves over each boundary
// variable and its replica entries.
func (p *planner) owners() error {
	if p.sc.NumVars() > math.MaxUint32 {
		return fmt.Errorf("shard: %s: %d variables: a sharded plan takes at most %d", p.path, p.sc.NumVars(), uint32(math.MaxUint32))
	}
	if !p.windowed {
		if ran, err := p.ownersByHulls(); ran || err != nil {
			p.from2 = "hulls"
			return err
		}
	}
	p.from2 = "windows"
	p.held = pageSet{} // the windows keep their own sets
	groups := min(ownerGroups, p.workers, max(1, runtime.GOMAXPROCS(0)))
	p.entries = make([]int, p.workers)
	heldBy := make([][]held, p.workers)
	walks := make([]*ownerWalk, groups)
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for g := range groups {
		o := &ownerWalk{p: p, lo: g * p.workers / groups, hi: (g + 1) * p.workers / groups, heldBy: heldBy,
			back: g == 1, t: p.newOwnerTable(), seen: newPageSet(p.sc.NumVars())}
		walks[g] = o
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = o.walk()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.measure != nil {
		p.measure()
	}
	suspects := p.settle(walks)
	p.suspects = len(suspects)
	if len(suspects) > 0 {
		if err := p.recount(suspects, heldBy); err != nil {
			return err
		}
	}
	// The boundary: every variable that two workers hold.
	for _, hs := range heldBy {
		for _, h := range hs {
			p.bvars = append(p.bvars, h.v)
		}
	}
	slices.Sort(p.bvars)
	p.bvars = slices.Compact(p.bvars)
	p.of = make([][]int, p.workers)
	p.deg = make([][]int, p.workers)
	for w, hs := range heldBy {
		slices.SortFunc(hs, func(a, b held) int { return a.v - b.v })
		for _, h := range hs {
			j, _ := slices.BinarySearch(p.bvars, h.v)
			p.of[w] = append(p.of[w], j)
			p.deg[w] = append(p.deg[w], int(h.c))
		}
	}
	return nil
}

// settle hands over what the groups' windows still hold: a variable in
// both windows is on the boundary, one in a window and retired by the
// other group (or retired by both) is a suspect, like the groups' own.
// Then the variables seen by no group are the isolated ones.
func (p *planner) settle(walks []*ownerWalk) map[int]bool {
	suspects := map[int]bool{}
	for _, o := range walks {
		for v := range o.suspects {
			suspects[v] = true
		}
	}
	if len(walks) == 2 {
		a, b := walks[0], walks[1]
		a.t.each(func(e *ownerEntry) {
			switch f := b.t.find(e.v); {
			case f != nil:
				a.hand(e)
				b.hand(f)
				f.c = -1 // handed
			case b.seen.has(int(e.v)):
				suspects[int(e.v)] = true
			case e.last < 0:
				a.hand(e)
			}
		})
		b.t.each(func(e *ownerEntry) {
			switch {
			case e.c < 0:
			case a.seen.has(int(e.v)):
				suspects[int(e.v)] = true
			case e.last < 0:
				b.hand(e)
			}
		})
		a.seen.intersect(b.seen, func(v int) { suspects[v] = true })
	} else {
		walks[0].t.each(func(e *ownerEntry) {
			if e.last < 0 {
				walks[0].hand(e)
			}
		})
	}
	seen := walks[0].seen
	for _, o := range walks {
		o.t.each(func(e *ownerEntry) { seen.add(int(e.v)) })
		o.t = nil
		if o != walks[0] {
			seen.union(o.seen)
			o.seen = nil
		}
	}
	seen.missing(func(v int) { p.isolated = append(p.isolated, v) })
	return suspects
}

// recount walks the factors once more and counts, for every suspect, each
// worker's factors over it; those of two workers or more are on the
// boundary. What the windows handed over of a suspect is dropped first.
func (p *planner) recount(suspects map[int]bool, heldBy [][]held) error {
	for w, hs := range heldBy {
		heldBy[w] = slices.DeleteFunc(hs, func(h held) bool { return suspects[h.v] })
	}
	type vw struct{ v, w int }
	count := map[vw]int32{}
	w := 0
	err := p.sc.ReadRecords(p.cutPos[0], 0, p.cut[p.workers], p.cards.Card, func(a int, f *model.Factor) error {
		for a >= p.cut[w+1] {
			w++
		}
		for _, v := range f.Vars {
			if suspects[v] {
				count[vw{v, w}]++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	workers := map[int]int{}
	for k := range count {
		workers[k.v]++
	}
	for k, c := range count {
		if workers[k.v] > 1 {
			heldBy[k.w] = append(heldBy[k.w], held{k.v, c})
		}
	}
	return nil
}

// ownerWalk is one group's walk of the second pass: the factors of
// workers [lo, hi), forwards or (back) backwards, so that its workers come
// in one order and each is left once. The window (t) keeps, for every
// variable touched lately, the worker that touched it last (last: w+1,
// negated once a second one came) and its factors there, and hands the
// pair over (heldBy) when another worker comes, and at the end when the
// variable is on the boundary; the variables it retires go to seen.
type ownerWalk struct {
	p        *planner
	lo, hi   int
	back     bool
	t        *ownerTable
	seen     *pageSet
	suspects map[int]bool
	heldBy   [][]held // shared: the group's workers' only
}

func (o *ownerWalk) hand(e *ownerEntry) {
	w := int(e.last)
	if w < 0 {
		w = -w
	}
	o.heldBy[w-1] = append(o.heldBy[w-1], held{int(e.v), e.c})
}

// touch notes that worker w's factor holds v.
func (o *ownerWalk) touch(v, w int) {
	if e := o.t.find(uint32(v)); e != nil {
		o.t.touched(e)
		switch l := int(e.last); {
		case l == w+1 || l == -(w+1):
			e.c++
		default: // another worker's before: v is a boundary variable
			o.hand(e)
			e.last, e.c = -int16(w+1), 1
		}
		return
	}
	if len(o.suspects) > 0 && o.suspects[v] {
		return
	}
	if o.seen.has(v) { // retired and back: who held it is lost
		if o.suspects == nil {
			o.suspects = map[int]bool{}
		}
		o.suspects[v] = true
		o.t.lost()
		return
	}
	if o.t.full() {
		o.t.retire(func(e *ownerEntry) {
			if e.last < 0 {
				o.hand(e)
			}
			o.seen.add(int(e.v))
		})
	}
	o.t.insert(ownerEntry{v: uint32(v), last: int16(w + 1), c: 1, step: o.t.now})
}

func (o *ownerWalk) walk() error {
	p := o.p
	// The group's entries, added to p.entries at the end: the two groups'
	// workers share its cache lines.
	entries := make([]int, o.hi-o.lo)
	defer func() { copy(p.entries[o.lo:o.hi], entries) }()
	factor := func(w int, vars []int) { o.factor(entries, w, vars) }
	if !o.back {
		w := o.lo
		return p.sc.ReadRecords(p.cutPos[o.lo], p.cut[o.lo], p.cut[o.hi], p.cards.Card, func(a int, f *model.Factor) error {
			for a >= p.cut[w+1] {
				w++
			}
			factor(w, f.Vars)
			return nil
		})
	}
	// Backwards: windows of whole chunks from the last, each read forwards
	// into a buffer of scopes and walked from its end.
	per := max(1, backWindow/p.chunk)
	first, last := p.cut[o.lo]/p.chunk, (p.cut[o.hi]+p.chunk-1)/p.chunk
	ends := make([]int32, 0, min(per*p.chunk, p.cut[o.hi]-p.cut[o.lo]))
	vars := make([]uint32, 0, 2*cap(ends)) // pairwise factors fit
	w := o.hi - 1
	for hi := last; hi > first; hi -= per {
		lo := max(first, hi-per)
		from, to := lo*p.chunk, min(hi*p.chunk, p.cut[o.hi])
		vars, ends = vars[:0], ends[:0]
		err := p.sc.ReadRecords(p.chunkPos[lo], from, to, p.cards.Card, func(_ int, f *model.Factor) error {
			for _, v := range f.Vars {
				vars = append(vars, uint32(v))
			}
			if len(vars) > math.MaxInt32 {
				return fmt.Errorf("shard: %s: over 2^31 scope entries in %d factors from factor %d", p.path, to-from, from)
			}
			ends = append(ends, int32(len(vars)))
			return nil
		})
		if err != nil {
			return err
		}
		for k := len(ends) - 1; k >= 0; k-- {
			for from+k < p.cut[w] {
				w--
			}
			start := int32(0)
			if k > 0 {
				start = ends[k-1]
			}
			ownerFactor(o, entries, w, vars[start:ends[k]])
		}
	}
	return nil
}

// factor notes worker w's factor over vars: its entries, and a touch of
// each variable.
func (o *ownerWalk) factor(entries []int, w int, vars []int) { ownerFactor(o, entries, w, vars) }

// ownerFactor is factor over the scopes of either walk (ints forwards, the
// window's uint32 backwards).
func ownerFactor[V int | uint32](o *ownerWalk, entries []int, w int, vars []V) {
	o.t.now++
	for _, v := range vars {
		entries[w-o.lo] += o.p.cards.Card(int(v))
		o.touch(int(v), w)
	}
}

// backWindow is about the most factors a backward walk reads at a time
// (their scopes, 4 bytes a variable and 4 a factor: 1.5 MiB for pairwise
// factors; a read costs about a megabyte of buffers besides). The window
// holds at most 2^31 scope entries: vars and ends are 32-bit.
const backWindow = 1 << 17

// ownerEntry is a variable in a window: v, the worker that touched it
// last (w+1, negated once a second one came; 0 marks an empty slot), its
// factors there (c; -1 once settle handed it over) and the step (the
// walk's factors so far, modulo 2^32: only differences are taken) of its
// last touch. 16 bytes: a variable's number is below 2^32 (owners).
type ownerEntry struct {
	v, step uint32
	c       int32
	last    int16
}

// ownerTable is the window: an open-addressing hash table of the
// variables touched lately. It learns how long a variable stays away
// between two touches (age: the most steps seen), and when it is half full
// retires the variables away for longer than twice that; it doubles when
// what stays fills a quarter of it, up to maxTableBits, beyond which it
// retires the longest away until it is less than half full.
type ownerTable struct {
	slots []ownerEntry
	stay  []ownerEntry // retire's survivors, kept for the next
	n     int
	now   uint32 // steps so far
	age   uint32
	kept  uint32 // the last retire's longest absence kept
	most  int    // slots
}

const (
	// maxTableBits is the window's largest size, 2^bits slots of 16
	// bytes (16 MiB): enough for a grid in row order of a few 10^5
	// columns (10^9 variables are 31,623).
	maxTableBits = 20
)

// newOwnerTable makes a window that keeps a variable away for twice the
// absences the first pass measured (planner.absence), 2^tableBits slots
// to start when the tests set it, else eight times what such a window
// holds of a file with the model's variables per factor (at least 2^10
// slots, 16 KiB; retire scans the slots about every 3 times that many new
// variables), and 2^tableMost (default maxTableBits) at most.
func (p *planner) newOwnerTable() *ownerTable {
	b, most := p.tableBits, p.tableMost
	if most <= 0 {
		most = maxTableBits
	}
	if b <= 0 {
		perFactor := float64(p.sc.NumVars()) / float64(max(1, p.sc.NumFactors()))
		holds := (2*float64(p.absence) + 64) * perFactor
		b = min(most, max(10, bits.Len(uint(8*holds))))
	}
	return &ownerTable{slots: make([]ownerEntry, 1<<b), most: 1 << most, age: p.absence}
}

// slot is where v's probe starts: v itself modulo the size, its higher
// bits folded in, so that the variables of a window in a grid in row
// order (consecutive numbers) take consecutive slots (a few cache lines)
// and numbers a multiple of the size apart do not pile up.
func (t *ownerTable) slot(v uint32) int {
	b := bits.TrailingZeros(uint(len(t.slots)))
	return int(v^v>>b^v>>(2*b)) & (len(t.slots) - 1)
}

// find returns v's entry, nil when v is not in the window.
func (t *ownerTable) find(v uint32) *ownerEntry {
	mask := len(t.slots) - 1
	for i := t.slot(v); ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.last == 0 {
			return nil
		}
		if e.v == v {
			return e
		}
	}
}

// lost notes that a retired variable came back: it was away for longer
// than the last retire kept, which the next keeps twice as long.
func (t *ownerTable) lost() { t.age = max(t.age, t.kept) }

// touched notes that e was touched at this step.
func (t *ownerTable) touched(e *ownerEntry) {
	t.age = max(t.age, t.now-e.step)
	e.step = t.now
}

// insert adds an entry for a variable not in the window.
func (t *ownerTable) insert(e ownerEntry) {
	mask := len(t.slots) - 1
	i := t.slot(e.v)
	for t.slots[i].last != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = e
	t.n++
}

func (t *ownerTable) full() bool { return 2*t.n >= len(t.slots) }

// retire drops (to gone) the entries away for longer than twice the
// longest absence seen, or as many more as the largest table needs, and
// grows the table when what stays fills a quarter of it. One scan of the
// slots: what stays is set aside, and the slots are rebuilt from it.
func (t *ownerTable) retire(gone func(*ownerEntry)) {
	keep := uint32(min(2*uint64(t.age)+64, math.MaxUint32))
	t.stay = t.stay[:0]
	for i := range t.slots {
		switch e := &t.slots[i]; {
		case e.last == 0:
		case t.now-e.step <= keep:
			t.stay = append(t.stay, *e)
		default:
			gone(e)
		}
	}
	size := len(t.slots)
	if 4*len(t.stay) >= size && size < t.most {
		size *= 2
	}
	for 2*len(t.stay) >= size && keep > 0 { // the largest table: retire more
		keep /= 2
		t.stay = slices.DeleteFunc(t.stay, func(e ownerEntry) bool {
			if t.now-e.step > keep {
				gone(&e)
				return true
			}
			return false
		})
	}
	// What stays now was all touched at this step: a factor wider than
	// the largest table. Grow past it until a quarter full, so that
	// inserting the rest of the factor neither finds no empty slot nor
	// retires at every variable; the table holds what the factor's scope
	// already does.
	for 4*len(t.stay) >= size && 2*len(t.stay) >= len(t.slots) {
		size *= 2
	}
	t.kept = keep
	if size == len(t.slots) {
		clear(t.slots)
	} else {
		t.slots = make([]ownerEntry, size)
	}
	t.n = 0
	for _, e := range t.stay {
		t.insert(e)
	}
}

// each calls fn with every entry in the window.
func (t *ownerTable) each(fn func(*ownerEntry)) {
	for i := range t.slots {
		if t.slots[i].last != 0 {
			fn(&t.slots[i])
		}
	}
}

// pageSet is a set of the variables 0..n-1: a bit per variable, by pages
// of 2^pageBits that exist only while some but not all of their variables
// are in the set (full marks a page whose variables all are).
type pageSet struct {
	n     int
	pages []*page
}

const pageBits = 16

type page struct {
	bits [1 << pageBits / 64]uint64
	n    int
}

// full stands for a page whose variables are all in the set.
var full = &page{}

func newPageSet(n int) *pageSet {
	return &pageSet{n: n, pages: make([]*page, (n+1<<pageBits-1)>>pageBits)}
}

// size is the number of variables of page k (a set whose n is not
// known yet, 0, has pages of 2^pageBits).
func (s *pageSet) size(k int) int {
	if s.n == 0 {
		return 1 << pageBits
	}
	return min(1<<pageBits, s.n-k<<pageBits)
}

// setSize says that the set is over the variables 0..n-1 (a set made
// without newPageSet grows as add needs: its n was 0), before missing;
// n is above every variable added.
func (s *pageSet) setSize(n int) {
	s.n = n
	if k := (n + 1<<pageBits - 1) >> pageBits; k > len(s.pages) {
		s.pages = append(s.pages, make([]*page, k-len(s.pages))...)
	}
}

func (s *pageSet) has(v int) bool {
	pg := s.pages[v>>pageBits]
	if pg == nil || pg == full {
		return pg == full
	}
	i := v & (1<<pageBits - 1)
	return pg.bits[i>>6]&(1<<(i&63)) != 0
}

func (s *pageSet) add(v int) {
	k := v >> pageBits
	if k >= len(s.pages) { // a set growing as it goes (n 0)
		s.pages = append(s.pages, make([]*page, k+1-len(s.pages))...)
	}
	pg := s.pages[k]
	if pg == full {
		return
	}
	if pg == nil {
		pg = &page{}
		s.pages[k] = pg
	}
	i := v & (1<<pageBits - 1)
	if bit := uint64(1) << (i & 63); pg.bits[i>>6]&bit == 0 {
		pg.bits[i>>6] |= bit
		if pg.n++; pg.n == s.size(k) {
			s.pages[k] = full
		}
	}
}

// union adds the variables of u (over as many variables).
func (s *pageSet) union(u *pageSet) {
	for k, q := range u.pages {
		switch pg := s.pages[k]; {
		case q == nil || pg == full:
		case q == full || pg == nil:
			if q != full {
				c := *q
				q = &c
			}
			s.pages[k] = q
		default:
			pg.n = 0
			for i := range pg.bits {
				pg.bits[i] |= q.bits[i]
				pg.n += bits.OnesCount64(pg.bits[i])
			}
			if pg.n == s.size(k) {
				s.pages[k] = full
			}
		}
	}
}

// intersect calls fn with every variable in both s and u.
func (s *pageSet) intersect(u *pageSet, fn func(v int)) {
	for k, pg := range s.pages {
		q := u.pages[k]
		if pg == nil || q == nil {
			continue
		}
		for i := range pg.bits {
			x := ^uint64(0)
			if pg != full {
				x &= pg.bits[i]
			}
			if q != full {
				x &= q.bits[i]
			}
			for ; x != 0; x &= x - 1 {
				if v := k<<pageBits + i*64 + bits.TrailingZeros64(x); v < s.n {
					fn(v)
				}
			}
		}
	}
}

// missing calls fn with every variable not in the set, in increasing order.
func (s *pageSet) missing(fn func(v int)) {
	for k, pg := range s.pages {
		switch {
		case pg == full:
		case pg == nil:
			for v := k << pageBits; v < k<<pageBits+s.size(k); v++ {
				fn(v)
			}
		default:
			for i, x := range pg.bits {
				for x = ^x; x != 0; x &= x - 1 {
					if v := k<<pageBits + i*64 + bits.TrailingZeros64(x); v < s.n {
						fn(v)
					}
				}
			}
		}
	}
}
