package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// PlanOptions configure PlanLayout.
type PlanOptions struct {
	// MaxEntries bounds the model's total states and payload entries (0:
	// model.DefaultMaxEntries); the workers get the same bound.
	MaxEntries int
	// Context, when not nil, stops the passes once it ends.
	Context context.Context
	Logger  *slog.Logger
	// Visit, when not nil, sees every factor of the first pass (the
	// coordinator's summary of the model's class, engine.Class).
	Visit func(a int, f *model.Factor)
}

// Layout is a sharded job's plan: one Spec per worker and what the
// coordinator keeps of the model (the boundary).
type Layout struct {
	Specs []Spec
	// BoundaryVars are the model's variables that two parts share, in
	// increasing order; boundary variable j is BoundaryVars[j].
	BoundaryVars []int
	// Boundary holds their cardinalities and unaries (boundary numbering)
	// and the model's constant.
	Boundary *model.Model
	// Of[w] lists worker w's boundary variables (boundary numbering,
	// increasing) and Deg[w] its slaves over each
	// (consensus.NewShardBoundary's arguments).
	Of, Deg [][]int
	// NumVars and NumFactors are the model's; Isolated counts its
	// variables in no factor (handed to the workers by number).
	NumVars, NumFactors, Isolated int
}

// maxChunk is the most factors between two noted record positions.
const maxChunk = 1024

// PlanLayout cuts the indexed model at path into parts for workers workers
// (see the package documentation). Every error says what is wrong, with
// the file's name.
func PlanLayout(path string, workers int, opts PlanOptions) (*Layout, error) {
	if workers < 1 || workers > math.MaxInt16 {
		return nil, fmt.Errorf("shard: %d workers: want 1 to %d", workers, math.MaxInt16)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f, size, err := openSized(path, "shard")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ropts := indexed.ReadOptions{MaxEntries: opts.MaxEntries, Context: opts.Context}
	sc, err := indexed.OpenScan(f, size, path, ropts)
	if err != nil {
		return nil, err
	}
	nf := sc.NumFactors()
	if nf < workers {
		return nil, &UnshardableError{fmt.Errorf("shard: %s: %d factors for %d workers: every worker needs one at least", path, nf, workers)}
	}
	p := &planner{sc: sc, path: path, workers: workers, log: log, visit: opts.Visit}
	start := time.Now()
	if err := p.ranges(); err != nil {
		return nil, err
	}
	log.Info("sharding: ranges cut", "factors", nf, "workers", workers, "seconds", time.Since(start).Seconds())
	start = time.Now()
	if err := p.owners(); err != nil {
		return nil, err
	}
	log.Info("sharding: boundary found", "boundary", len(p.bvars), "isolated", len(p.isolated), "seconds", time.Since(start).Seconds())
	return p.layout(size, opts.MaxEntries)
}

// planner is PlanLayout's state between its passes.
type planner struct {
	sc      *indexed.Scanner
	path    string
	workers int
	log     *slog.Logger
	visit   func(int, *model.Factor)

	cards indexed.CardRuns
	// Pass 1: the record position and the cost of every chunk of factors,
	// then each worker's first factor (cut[w]; cut[workers] = factors) and
	// where its record starts.
	chunk     int
	chunkPos  []int64
	chunkCost []float64
	cut       []int
	cutPos    []int64
	// Pass 2: the boundary variables (increasing) and the variables in no
	// factor; per worker, its boundary variables, its slaves over each,
	// and its replica entries.
	bvars    []int
	isolated []int
	of, deg  [][]int
	entries  []int
}

// ranges is the first pass: cardinalities, the checks of what a sharded
// run cannot take, and the factors cut into ranges of about equal cost.
func (p *planner) ranges() error {
	nf := p.sc.NumFactors()
	p.chunk = min(maxChunk, max(1, nf/(64*p.workers)))
	err := p.sc.Walk(indexed.Visitor{
		Cards: func(_, n, card int) error {
			p.cards.Append(n, card)
			return nil
		},
		Unaries: func(i int, u []float64) error {
			for k, x := range u {
				if math.IsInf(x, -1) {
					return &UnshardableError{fmt.Errorf("shard: %s: variable %d: state %d is forbidden (-Inf unary); a sharded run needs every state allowed: solve the model unsharded", p.path, i, k)}
				}
			}
			return nil
		},
		Factor: func(a int, rec indexed.Record, f *model.Factor) error {
			if len(f.Vars) < 2 {
				return &UnshardableError{fmt.Errorf("shard: %s: factor %d is over %d variables; a sharded run needs every factor over two or more (coordinator convert folds the others into the unaries)", p.path, a, len(f.Vars))}
			}
			if a%p.chunk == 0 {
				p.chunkPos = append(p.chunkPos, rec.Pos)
				p.chunkCost = append(p.chunkCost, 0)
			}
			p.chunkCost[len(p.chunkCost)-1] += p.cost(f, rec.Payload)
			if p.visit != nil {
				p.visit(a, f)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	// Cut at chunk boundaries, each worker's share of the cost about the
	// same; at least one chunk each.
	var total float64
	for _, c := range p.chunkCost {
		total += c
	}
	nc := len(p.chunkCost)
	if nc < p.workers {
		return fmt.Errorf("shard: %s: %d chunks of factors for %d workers", p.path, nc, p.workers)
	}
	p.cut = make([]int, p.workers+1)
	p.cutPos = make([]int64, p.workers)
	k, acc := 0, 0.0
	for w := range p.workers {
		p.cut[w], p.cutPos[w] = k*p.chunk, p.chunkPos[k]
		target := total * float64(w+1) / float64(p.workers)
		for first := true; k < nc-(p.workers-1-w); first = false {
			if !first && acc+p.chunkCost[k]/2 > target {
				break
			}
			acc += p.chunkCost[k]
			k++
		}
	}
	p.cut[p.workers] = nf
	p.chunkPos, p.chunkCost = nil, nil
	return nil
}

// cost estimates a factor's share of an iteration: its replica entries
// and its table.
func (p *planner) cost(f *model.Factor, pl indexed.Payload) float64 {
	c := float64(pl.Entries())
	for _, v := range f.Vars {
		c += float64(p.cards.Card(v))
	}
	return c
}

// owners is the second pass: the workers whose factors hold each
// variable, from which the variables of several workers (the boundary)
// and of none (isolated), and each worker's slaves over each boundary
// variable and its replica entries. The workers' ranges are read in
// groups of consecutive workers, on a goroutine each (ownerGroups: two
// when there are two cores and workers), each group's walk keeping three
// bytes a variable (ownerWalk); then every variable is settled from the
// groups' findings.
func (p *planner) owners() error {
	groups := min(ownerGroups, p.workers, max(1, runtime.GOMAXPROCS(0)))
	p.entries = make([]int, p.workers)
	heldBy := make([][]held, p.workers)
	walks := make([]*ownerWalk, groups)
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for g := range groups {
		o := &ownerWalk{p: p, lo: g * p.workers / groups, hi: (g + 1) * p.workers / groups, heldBy: heldBy}
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
	for v := range p.sc.NumVars() {
		several, touched := false, 0
		for _, o := range walks {
			if l := o.last[v]; l != 0 {
				several, touched = several || l < 0, touched+1
			}
		}
		switch {
		case several || touched > 1:
			for _, o := range walks {
				if o.last[v] != 0 {
					o.hand(v)
				}
			}
			p.bvars = append(p.bvars, v)
		case touched == 0:
			p.isolated = append(p.isolated, v)
		}
	}
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

// ownerGroups is the most goroutines of the second pass.
const ownerGroups = 2

// held is a boundary variable v that a worker's factors hold, c of them.
type held struct {
	v int
	c int32
}

// ownerWalk is one group's walk of the second pass: the factors of
// workers [lo, hi), which come in the order of the workers' ranges, so
// that a variable's workers come in increasing order. It keeps the last
// one (last: w+1, negated once a second one came; 0: none) and its factors
// there (count, saturating into big), and hands the pair over (heldBy)
// when another worker comes, and at the end when the variable is on the
// boundary.
type ownerWalk struct {
	p      *planner
	lo, hi int
	last   []int16
	count  []uint8
	big    map[int]int32 // the counts from 255 on
	heldBy [][]held      // shared: the group's workers' only
}

func (o *ownerWalk) hand(v int) {
	l := int(o.last[v])
	w, c := abs(l)-1, int32(o.count[v])
	if c == math.MaxUint8 {
		c = o.big[v]
	}
	o.heldBy[w] = append(o.heldBy[w], held{v, c})
}

func (o *ownerWalk) walk() error {
	p := o.p
	n := p.sc.NumVars()
	o.last, o.count, o.big = make([]int16, n), make([]uint8, n), map[int]int32{}
	w := o.lo
	return p.sc.ReadRecords(p.cutPos[o.lo], p.cut[o.lo], p.cut[o.hi], p.cards.Card, func(a int, f *model.Factor) error {
		for a >= p.cut[w+1] {
			w++
		}
		for _, v := range f.Vars {
			p.entries[w] += p.cards.Card(v)
			switch l := int(o.last[v]); {
			case l == w+1 || l == -(w+1):
				switch o.count[v] {
				case math.MaxUint8 - 1:
					o.big[v] = math.MaxUint8
				case math.MaxUint8:
					o.big[v]++
					continue
				}
				o.count[v]++
				continue
			case l == 0:
				o.last[v] = int16(w + 1)
			default: // another worker's before: v is a boundary variable
				o.hand(v)
				delete(o.big, v)
				o.last[v] = -int16(w + 1)
			}
			o.count[v] = 1
		}
		return nil
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// layout puts the passes' results together, with the boundary's unaries.
func (p *planner) layout(size int64, maxEntries int) (*Layout, error) {
	l := &Layout{BoundaryVars: p.bvars, Of: p.of, Deg: p.deg, NumVars: p.sc.NumVars(),
		NumFactors: p.sc.NumFactors(), Isolated: len(p.isolated)}
	cards, unary, err := p.sc.ReadVars(p.bvars)
	if err != nil {
		return nil, err
	}
	l.Boundary = model.New(cards)
	copy(l.Boundary.Unary, unary)
	l.Boundary.Constant = p.sc.Constant()
	global := make([]int32, len(p.bvars))
	for w := range p.workers {
		for k, j := range p.of[w] {
			global[j] += int32(p.deg[w][k])
		}
	}
	iso := 0
	for w := range p.workers {
		s := Spec{Path: p.path, Size: size, StructureCRC: p.sc.StructureCRC(), NumVars: p.sc.NumVars(),
			From: p.cut[w], To: p.cut[w+1], Pos: p.cutPos[w], ReplicaEntries: p.entries[w], MaxEntries: maxEntries}
		for _, j := range p.of[w] {
			s.Boundary = append(s.Boundary, int64(p.bvars[j]))
			s.Degree = append(s.Degree, global[j])
		}
		// The variables in no factor, by number: the first workers take
		// one more when they do not divide evenly.
		n := len(p.isolated) / p.workers
		if w < len(p.isolated)%p.workers {
			n++
		}
		for _, v := range p.isolated[iso : iso+n] {
			s.Isolated = append(s.Isolated, int64(v))
		}
		iso += n
		l.Specs = append(l.Specs, s)
	}
	return l, nil
}
