package shard

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// PlanOptions configure PlanLayout.
type PlanOptions struct {
	// MaxEntries bounds each part's payload entries, checked here, and
	// each part's states, which its worker checks as it reads them (0:
	// model.DefaultMaxEntries): the budget of one process. The
	// coordinator holds neither, so the model's totals are not bounded
	// (indexed.ReadOptions.Ranges): a model that fits its workers runs,
	// however large.
	MaxEntries int
	// Context, when not nil, stops the passes once it ends.
	Context context.Context
	Logger  *slog.Logger
	// Visit, when not nil, sees every factor of the first pass (the
	// coordinator's summary of the model's class, engine.Class); not with
	// a Summary, whose own visit saw them as they were written.
	Visit func(a int, f *model.Factor)
	// Summary, when not nil, is the first pass taken as the file at path
	// was written by this process (NewSummary): PlanLayout takes it
	// instead of walking the file (the same plan and the same errors), and
	// fails when the file is not the one written. One plan takes it.
	Summary *Summary
	// Cut, when not nil, is called once the first pass has cut the
	// ranges (the model read through, shardable and within the budget),
	// before the second pass: what the run can start while the boundary
	// is found (launch starts its local workers).
	Cut func()
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
	p, err := planWith(path, workers, opts)
	if err != nil {
		return nil, err
	}
	return p.result, nil
}

// planWith is PlanLayout, with the planner it ran (closed: its file).
func planWith(path string, workers int, opts PlanOptions) (*planner, error) {
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
	// One scanner with no budget of its own: ranges checks every part's
	// entries against opts.MaxEntries itself (a Walk with Ranges checks no
	// totals anyway), the owners' walks read across parts (half the
	// workers at once, forward) and keep only the scopes, and the
	// boundary read (layout) holds the boundary's states alone.
	sc, err := indexed.OpenScan(f, size, path, indexed.ReadOptions{MaxEntries: math.MaxInt, Ranges: true, Context: opts.Context})
	if err != nil {
		return nil, err
	}
	nf := sc.NumFactors()
	if nf < workers {
		return nil, &UnshardableError{fmt.Errorf("shard: %s: %d factors for %d workers: every worker needs one at least", path, nf, workers)}
	}
	p := &planner{sc: sc, path: path, workers: workers, log: log, visit: opts.Visit, limit: opts.MaxEntries}
	start := time.Now()
	if err := p.ranges(opts.Summary); err != nil {
		return nil, err
	}
	log.Info("sharding: ranges cut", "factors", nf, "workers", workers, "from", p.from, "seconds", time.Since(start).Seconds())
	if opts.Cut != nil {
		opts.Cut()
	}
	start = time.Now()
	if err := p.owners(); err != nil {
		return nil, err
	}
	log.Info("sharding: boundary found", "boundary", len(p.bvars), "isolated", len(p.isolated), "from", p.from2, "seconds", time.Since(start).Seconds())
	if p.result, err = p.layout(size, opts.MaxEntries); err != nil {
		return nil, err
	}
	return p, nil
}

// planner is PlanLayout's state between its passes.
type planner struct {
	sc      *indexed.Scanner
	path    string
	workers int
	log     *slog.Logger
	visit   func(int, *model.Factor)
	limit   int    // on each part's payload entries (0: the default)
	from    string // what the first pass read: "walk" or "summary"
	result  *Layout

	cards indexed.CardRuns
	// Pass 1: the chunks (tally), then each worker's first factor (cut[w];
	// cut[workers] = factors) and where its record starts; the chunks'
	// positions stay for the second pass's backward walk.
	tally
	cut    []int
	cutPos []int64
	// Pass 2: the boundary variables (increasing) and the variables in no
	// factor; per worker, its boundary variables, its slaves over each,
	// and its replica entries.
	bvars    []int
	isolated []int
	of, deg  [][]int
	entries  []int
	suspects int // the variables counted again (owners.go)
	// The absences' 99th percentile (tally.sample), which sizes the
	// second pass's window (owners.go).
	absence uint32

	// tableBits and tableMost are the windows' starting and largest sizes
	// (0: sized from the absences, maxTableBits), and measure, when not
	// nil, is called once the walks end, with their windows and sets
	// still held (the tests' look at the pass's memory).
	tableBits, tableMost int
	measure              func()
	// windowed: the second pass walks every factor (owners.go), even
	// where the hulls would do (hulls.go; the tests of the walk); maxCand,
	// when not 0, bounds the hulls' candidates (the tests' fallback);
	// from2 says which pass ran.
	windowed bool
	maxCand  int
	from2    string
}

// ranges is the first pass: cardinalities, the checks of what a sharded
// run cannot take, and the factors cut into ranges of about equal cost;
// from sum, when not nil, instead of a walk of the file (first).
func (p *planner) ranges(sum *Summary) error {
	nf := p.sc.NumFactors()
	p.chunk = chunkFor(nf, p.workers)
	if err := p.first(sum); err != nil {
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
	limit := model.EntryLimit(p.limit)
	for w := range p.workers {
		e := 0
		for _, n := range p.chunkEntries[p.cut[w]/p.chunk : (p.cut[w+1]+p.chunk-1)/p.chunk] {
			e += n
		}
		if e > limit {
			return fmt.Errorf("shard: %s: part %d of %d (factors %d to %d) has %d table entries, over the budget of %d per process (--max-entries): run on more workers, or raise it", p.path, w, p.workers, p.cut[w], p.cut[w+1]-1, e, limit)
		}
	}
	p.chunkCost, p.chunkEntries = nil, nil
	p.absence = p.sample.absence()
	return nil
}

// walk reads what the first pass needs from the file: the cardinalities,
// the unaries' check, and each factor's check and share of its chunk
// (visit, when not nil, sees every factor).
func (p *planner) walk(visit func(int, *model.Factor)) error {
	return p.sc.Walk(indexed.Visitor{
		Cards: func(_, n, card int) error {
			p.cards.Append(n, card)
			return nil
		},
		Unaries: func(i int, u []float64) error {
			for k, x := range u {
				if math.IsInf(x, -1) {
					return forbiddenError(p.path, i, k)
				}
			}
			return nil
		},
		Factor: func(a int, rec indexed.Record, f *model.Factor) error {
			if len(f.Vars) < 2 {
				return shortError(p.path, a, len(f.Vars))
			}
			p.tally.add(a, rec.Pos, rec.Payload.Entries(), f, &p.cards)
			if visit != nil {
				visit(a, f)
			}
			return nil
		},
	})
}

// forbiddenError and shortError are the first pass's refusals of a model
// (a walk's or a Summary's).
func forbiddenError(path string, i, k int) error {
	return &UnshardableError{fmt.Errorf("shard: %s: variable %d: state %d is forbidden (-Inf unary); a sharded run needs every state allowed: solve the model unsharded", path, i, k)}
}

func shortError(path string, a, arity int) error {
	return &UnshardableError{fmt.Errorf("shard: %s: factor %d is over %d variables; a sharded run needs every factor over two or more (coordinator convert folds the others into the unaries)", path, a, arity)}
}

// chunkFor is the factors between two noted record positions of a
// model of nf factors cut for workers: about 64 chunks a worker, at most
// maxChunk factors each.
func chunkFor(nf, workers int) int {
	return min(maxChunk, max(1, nf/(64*workers)))
}

// tally is what the first pass learns of the factors, a chunk at a time:
// the record position and the cost of every chunk of factors (and its
// payload entries), and a sample of the absences; for the second pass's
// hulls (hulls.go), every chunk's least and greatest variable and replica
// entries, and the variables some factor holds.
type tally struct {
	chunk        int
	chunkPos     []int64
	chunkCost    []float64
	chunkEntries []int // payload entries
	// The absences measured on the variables numbered below gapVars (how
	// long a variable goes untouched between two of its factors), which
	// size the second pass's window (owners.go).
	sample gapSample
	// chunkLo and chunkHi bound the variables of each chunk's factors,
	// chunkReplica sums their cardinalities; held is the set of the
	// variables in some factor (by pages, dropped once full: a few pages
	// of a file in a local order).
	chunkLo, chunkHi []uint32
	chunkReplica     []int
	held             pageSet
}

// add counts factor a, f, whose record starts at pos and whose payload
// has entries entries, into its chunk (cards: the model's).
func (t *tally) add(a int, pos int64, entries int, f *model.Factor, cards *indexed.CardRuns) {
	if a%t.chunk == 0 {
		t.chunkPos = append(t.chunkPos, pos)
		t.chunkCost = append(t.chunkCost, 0)
		t.chunkEntries = append(t.chunkEntries, 0)
		t.chunkLo = append(t.chunkLo, math.MaxUint32)
		t.chunkHi = append(t.chunkHi, 0)
		t.chunkReplica = append(t.chunkReplica, 0)
	}
	// Its share of an iteration: its replica entries and its table.
	k, r := len(t.chunkPos)-1, 0
	lo, hi := t.chunkLo[k], t.chunkHi[k]
	for _, v := range f.Vars {
		r += cards.Card(v)
		lo, hi = min(lo, uint32(v)), max(hi, uint32(v))
		t.held.add(v)
	}
	t.chunkLo[k], t.chunkHi[k] = lo, hi
	t.chunkCost[k] += float64(entries + r)
	t.chunkEntries[k] += entries
	t.chunkReplica[k] += r
	t.sample.note(a, f.Vars)
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

// gapSample measures absences (factors between two that hold a variable)
// on the variables numbered below gapVars: 32 KiB whatever the model.
type gapSample struct {
	last, most []uint32 // a+1 of the last factor holding v; v's longest absence
}

const gapVars = 4096

func (g *gapSample) note(a int, vars []int) {
	if g.last == nil {
		g.last, g.most = make([]uint32, gapVars), make([]uint32, gapVars)
	}
	for _, v := range vars {
		if v < gapVars {
			if l := g.last[v]; l != 0 {
				g.most[v] = max(g.most[v], uint32(a+1)-l)
			}
			g.last[v] = uint32(a + 1)
		}
	}
}

// absence is the 99th percentile of the sample's longest absences (0
// when no variable came back), and frees the sample.
func (g *gapSample) absence() uint32 {
	var gaps []uint32
	for _, m := range g.most {
		if m > 0 {
			gaps = append(gaps, m)
		}
	}
	g.last, g.most = nil, nil
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)*99/100]
}
