package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/partition"
)

// Load builds a worker's part from its spec, reading the model file by
// byte ranges: its factors' records and payloads and its variables'
// cardinalities and unaries, nothing else. The part has one slave per
// factor, in the file's order, over its own numbering of the variables.
func Load(ctx context.Context, spec *Spec) (*consensus.Part, error) {
	return readPart(ctx, spec, 0, true)
}

// LoadFlat is Load for a worker that only runs the part: when all the
// part's factors are Potts factors, or all Pair factors, it keeps them
// flat (consensus.Part.Pairs: 16 bytes a factor, where a model.Factor
// takes 96 with a pair's scope) and builds no plan; a part of other
// factors is Load's. consensus.NewWorker runs both alike, to the bit.
func LoadFlat(ctx context.Context, spec *Spec) (*consensus.Part, error) {
	return readPart(ctx, spec, kindsOf(model.Potts, model.Pair), true)
}

// kinds is a set of factor kinds, bit k for kind k: a mask rather than a
// function, tested once a factor of a part.
type kinds uint64

// kindsOf is the set of ks.
func kindsOf(ks ...model.Kind) kinds {
	var s kinds
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

// has reports whether k is in s.
func (s kinds) has(k model.Kind) bool { return k < 64 && s&(1<<k) != 0 }

// readPart reads spec's part: flat pairs when its factors are all pairs of
// one kind of flatKinds (0: none), with the plan of its slaves when plan
// asks (a piece runs the part whole: LoadPiece).
func readPart(ctx context.Context, spec *Spec, flatKinds kinds, plan bool) (*consensus.Part, error) {
	f, size, done, err := spec.open()
	if err != nil {
		return nil, err
	}
	defer done()
	if size != spec.Size {
		return nil, errors.New("shard: the model file's size differs from the coordinator's plan: not the same model file")
	}
	// The budget bounds the part read (its states, its payload entries),
	// not the model's totals.
	sc, err := indexed.OpenScan(f, size, "the model file", indexed.ReadOptions{MaxEntries: spec.MaxEntries, Ranges: true, Context: ctx})
	if err != nil {
		return nil, err
	}
	switch {
	case sc.StructureCRC() != spec.StructureCRC:
		return nil, fmt.Errorf("shard: the model file: structure checksum %08x, the coordinator planned %08x: not the same model file", sc.StructureCRC(), spec.StructureCRC)
	case sc.NumVars() != spec.NumVars:
		return nil, fmt.Errorf("shard: the model file: %d variables, the coordinator planned %d", sc.NumVars(), spec.NumVars)
	case spec.From < 0 || spec.To <= spec.From || spec.To > sc.NumFactors():
		return nil, fmt.Errorf("shard: the model file: factors [%d,%d) of %d", spec.From, spec.To, sc.NumFactors())
	case len(spec.Degree) != len(spec.Boundary):
		return nil, fmt.Errorf("shard: %d degrees for %d boundary variables", len(spec.Degree), len(spec.Boundary))
	}
	runs, err := sc.ReadCards() // run-length: O(1) for equal cardinalities
	if err != nil {
		return nil, err
	}
	// The factors, flat (consensus.Pairs) while they are all pairwise of
	// one kind; the first other one turns them into model.Factors.
	nf := spec.To - spec.From
	q := &consensus.Pairs{}
	flat := flatKinds != 0 && spec.NumVars <= math.MaxInt32
	var factors []model.Factor
	if !flat {
		factors = make([]model.Factor, 0, nf)
	}
	// The flat pairs are written by index, nq of them so far (an append
	// a slice would store its header back into q a factor).
	nq := 0
	err = sc.ReadRecords(spec.Pos, spec.From, spec.To, runs.Card, func(a int, f *model.Factor) error {
		if len(f.Vars) < 2 {
			return fmt.Errorf("shard: the model file: factor %d is over %d variables", a, len(f.Vars))
		}
		if flat && len(f.Vars) == 2 && flatKinds.has(f.Kind) && (nq == 0 || f.Kind == q.Kind) {
			if q.W == nil {
				q.Kind, q.I, q.J, q.W = f.Kind, make([]int32, nf), make([]int32, nf), make([]float64, nf)
			}
			q.I[nq], q.J[nq], q.W[nq] = int32(f.Vars[0]), int32(f.Vars[1]), f.Weight
			nq++
			return nil
		}
		if flat {
			flat = false
			q.I, q.J, q.W = q.I[:nq], q.J[:nq], q.W[:nq]
			factors = q.AppendFactors(make([]model.Factor, 0, nf))
			q = nil
		}
		factors = append(factors, *f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if flat {
		q.I, q.J, q.W = q.I[:nq], q.J[:nq], q.W[:nq]
	} else {
		q = nil
	}
	num, err := partVars(scopes{factors, q}, spec)
	if err != nil {
		return nil, err
	}
	vars := num.vars
	cards, unary, err := sc.ReadVars(vars)
	if err != nil {
		return nil, err
	}
	// The model takes the arrays read (model.New would copy them).
	m := &model.Model{Cards: cards, UnaryOff: make([]int, len(cards)+1), Unary: unary}
	for i, c := range cards {
		m.UnaryOff[i+1] = m.UnaryOff[i] + c
	}
	for k, u := range m.Unary { // every non-finite entry refused (ReadVars has refused NaN and +Inf already)
		if math.IsInf(u, 0) || math.IsNaN(u) {
			return nil, fmt.Errorf("shard: the model file: unary entry %d of the part is %v", k, u)
		}
	}
	// The factors over the part's numbering, in place.
	if q != nil {
		num.localPairs(q)
		// m is valid as built: ReadVars checked the cardinalities (>= 1),
		// the loop above the unaries (finite), and UnaryOff follows the
		// cardinalities (model.Validate checks no more of a model without
		// factors).
		if err := q.Validate(m.Cards); err != nil {
			return nil, fmt.Errorf("shard: the model file: factors [%d,%d): %w", spec.From, spec.To, err)
		}
		return assemble(m, q, vars, spec, plan)
	}
	for a := range factors {
		for k, v := range factors[a].Vars {
			factors[a].Vars[k] = num.local(v)
		}
	}
	m.Factors = factors
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("shard: the model file: factors [%d,%d): %w", spec.From, spec.To, err)
	}
	return assemble(m, nil, vars, spec, plan)
}

// scopes are a part's factors' scopes: q's pairs when q is not nil, else
// the factors'. Their variables are read in place: a list of them (with
// repeats, 2 a pair) is made only to sort it (sortedVars).
type scopes struct {
	factors []model.Factor
	q       *consensus.Pairs
}

// span returns the smallest and largest variable of the scopes (math.MaxInt
// and -1 when they are empty) and their number of entries.
func (s scopes) span() (lo, hi, entries int) {
	lo, hi = math.MaxInt, -1
	if s.q != nil {
		for a := range s.q.W {
			u, v := int(s.q.I[a]), int(s.q.J[a])
			lo, hi = min(lo, u, v), max(hi, u, v)
		}
		return lo, hi, 2 * s.q.Len()
	}
	for a := range s.factors {
		for _, v := range s.factors[a].Vars {
			lo, hi = min(lo, v), max(hi, v)
		}
		entries += len(s.factors[a].Vars)
	}
	return lo, hi, entries
}

// mark sets mark[v-lo] to 1 for every variable v of the scopes.
func (s scopes) mark(mark []int32, lo int) {
	if s.q != nil {
		for a := range s.q.W {
			mark[int(s.q.I[a])-lo], mark[int(s.q.J[a])-lo] = 1, 1
		}
		return
	}
	for a := range s.factors {
		for _, v := range s.factors[a].Vars {
			mark[v-lo] = 1
		}
	}
}

// vars returns the variables of the scopes, with repeats, in an array with
// room for the isolated variables of a spec.
func (s scopes) vars(entries int) []int {
	vars := make([]int, 0, entries)
	if s.q != nil {
		for a := range s.q.W {
			vars = append(vars, int(s.q.I[a]), int(s.q.J[a]))
		}
		return vars
	}
	for a := range s.factors {
		vars = append(vars, s.factors[a].Vars...)
	}
	return vars
}

// numbering is a part's variables, increasing, and the part's number of
// each (its index in vars).
type numbering struct {
	vars []int
	// lo is the first variable, and dense[v-lo] the number of v when the
	// variables span a range not much longer than the scopes (a part of a
	// file in a local order: a grid's rows); nil: a binary search in vars.
	lo    int
	dense []int32
}

// local is the part's number of v, one of its variables.
func (n *numbering) local(v int) int {
	if n.dense != nil {
		return int(n.dense[v-n.lo])
	}
	k, _ := slices.BinarySearch(n.vars, v)
	return k
}

// localPairs renumbers q's pairs, over variables of the part, as the
// part's (the dense look-up inlined: a loop over every scope entry).
func (n *numbering) localPairs(q *consensus.Pairs) {
	if d := n.dense; d != nil {
		for a := range q.W {
			q.I[a], q.J[a] = d[int(q.I[a])-n.lo], d[int(q.J[a])-n.lo]
		}
		return
	}
	for a := range q.W {
		q.I[a], q.J[a] = int32(n.local(int(q.I[a]))), int32(n.local(int(q.J[a])))
	}
}

// partVars numbers the variables of the part (those of its factors'
// scopes, and its isolated ones), increasing, and checks the spec's
// boundary and isolated variables against them. When they span a range at
// most twice as long as the scopes' entries, they are marked in an array
// over the range (linear, the numbering an array look-up); else sorted.
func partVars(sc scopes, spec *Spec) (*numbering, error) {
	lo, hi, entries := sc.span()
	if entries == 0 && len(spec.Isolated) == 0 {
		return &numbering{}, nil
	}
	for k, v := range spec.Boundary {
		if k > 0 && v <= spec.Boundary[k-1] {
			return nil, fmt.Errorf("shard: boundary variables out of order at %d", v)
		}
	}
	for k, v := range spec.Isolated {
		if v < 0 || v >= int64(spec.NumVars) || k > 0 && v <= spec.Isolated[k-1] {
			return nil, fmt.Errorf("shard: isolated variable %d out of range [0,%d) or out of order", v, spec.NumVars)
		}
	}
	for _, v := range spec.Isolated {
		lo, hi = min(lo, int(v)), max(hi, int(v))
	}
	if span := hi - lo + 1; span <= 2*entries+len(spec.Isolated) {
		return denseVars(sc, lo, span, spec)
	}
	return sortedVars(sc.vars(entries+len(spec.Isolated)), spec)
}

// sortedVars is partVars by sorting vars.
func sortedVars(vars []int, spec *Spec) (*numbering, error) {
	slices.Sort(vars)
	vars = slices.Compact(vars)
	for _, v := range spec.Boundary {
		if _, found := slices.BinarySearch(vars, int(v)); !found {
			return nil, fmt.Errorf("shard: boundary variable %d is in none of the part's factors", v)
		}
	}
	inFactors := len(vars)
	for _, v := range spec.Isolated {
		if _, found := slices.BinarySearch(vars[:inFactors], int(v)); found {
			return nil, fmt.Errorf("shard: variable %d is in the part's factors, the spec says it is in none", v)
		}
		vars = append(vars, int(v))
	}
	slices.Sort(vars)
	// A copy: vars was sized for every scope entry (2 per factor of a
	// grid, twice the variables), and Clip would keep that array.
	return &numbering{vars: slices.Clone(vars)}, nil
}

// denseVars is partVars over an array of span marks from lo: 1 for a
// variable of the factors, 2 for an isolated one, then the numbers.
func denseVars(sc scopes, lo, span int, spec *Spec) (*numbering, error) {
	mark := make([]int32, span)
	sc.mark(mark, lo)
	for _, v := range spec.Boundary {
		if i := int(v) - lo; i < 0 || i >= span || mark[i] != 1 {
			return nil, fmt.Errorf("shard: boundary variable %d is in none of the part's factors", v)
		}
	}
	for _, v := range spec.Isolated {
		if mark[int(v)-lo] == 1 {
			return nil, fmt.Errorf("shard: variable %d is in the part's factors, the spec says it is in none", v)
		}
		mark[int(v)-lo] = 2
	}
	n := 0
	for _, c := range mark {
		if c != 0 {
			n++
		}
	}
	num := &numbering{vars: make([]int, 0, n), lo: lo, dense: mark}
	for i, c := range mark {
		if c != 0 {
			mark[i] = int32(len(num.vars))
			num.vars = append(num.vars, lo+i)
		}
	}
	return num, nil
}

// assemble makes the part: one slave per factor (per pair of q when not
// nil: with plan, partition.PerFactor's plan of them), the degrees (the part's own for its interior, the spec's for its
// boundary) and the boundary.
func assemble(m *model.Model, q *consensus.Pairs, vars []int, spec *Spec, plan bool) (*consensus.Part, error) {
	p := &consensus.Part{Vars: vars, Model: m, Pairs: q, Degree: make([]int, len(vars))}
	entries := 0
	if q != nil {
		for a := range q.W {
			for _, v := range [2]int32{q.I[a], q.J[a]} {
				p.Degree[v]++
				entries += m.Cards[v]
			}
		}
	} else {
		if plan {
			p.Plan = partition.PerFactor(m)
		}
		for a := range m.Factors {
			for _, v := range m.Factors[a].Vars {
				p.Degree[v]++
				entries += m.Cards[v]
			}
		}
	}
	if entries != spec.ReplicaEntries {
		return nil, fmt.Errorf("shard: the model file: the part has %d replica entries, the coordinator counted %d", entries, spec.ReplicaEntries)
	}
	p.Boundary = make([]int, len(spec.Boundary))
	for k, v := range spec.Boundary {
		lv, _ := slices.BinarySearch(vars, int(v))
		if int(spec.Degree[k]) <= p.Degree[lv] {
			return nil, fmt.Errorf("shard: boundary variable %d: degree %d, the part alone has %d slaves over it", v, spec.Degree[k], p.Degree[lv])
		}
		p.Boundary[k] = lv
		p.Degree[lv] = int(spec.Degree[k])
	}
	return p, nil
}
