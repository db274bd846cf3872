package shard

import (
	"errors"
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// Summary is the plan's first pass (planner.ranges) taken while the
// indexed file is written, instead of by a walk of the file afterwards:
// Report's hooks, given to the writer (indexed.WriteOptions.Report,
// modelfile.ConvertOptions.Report), see each factor as it is written,
// and PlanOptions.Summary hands what they kept to PlanLayout. It keeps
// what the walk keeps (tally), per chunk of maxChunk factors, not per
// factor: each chunk's record position (relative until Close says where
// the records start), cost, payload and replica entries and least and
// greatest variable (the second pass's hulls), the absences' sample, the
// cardinalities' runs, the first factor over fewer than two variables,
// and the set of the variables some factor holds (a bit each, by pages
// dropped once full).
//
// A plan of fewer than 64 x maxChunk factors per worker cuts smaller
// chunks (chunkFor), which a Summary written before the number of factors
// was known (folds drop some) cannot have: PlanLayout then walks the file
// for the chunks, a walk of at most 64 x 1024 factors per worker, and
// still takes the rest (the factors were seen by the Summary's visit).
//
// Skipping the walk skips its check of the structure's checksum: the
// file is the one this process has just written (launch converts the
// model into its own state directory in the same run), and PlanLayout
// checks that the file it opens has the size, structure checksum and
// counts that Close reported. What the workers read is still checked:
// every worker's ReadRecords decodes and checks each record of its range
// (the ranges cover every factor), and the payload blocks against their
// checksums, as does the second pass with what it reads (all the ranges
// in owners.go, the chunks near the cuts in hulls.go).
type Summary struct {
	tally
	visit func(int, *model.Factor)
	// The first factor over fewer than two variables, and its arity
	// (short < 0: none).
	short, shortArity int
	written           indexed.Written
	closed, taken     bool
}

// NewSummary returns an empty Summary; visit, when not nil, sees every
// factor as it is written, as PlanOptions.Visit sees the walk's (a
// factor with its payload, which the walk's lacks).
func NewSummary(visit func(a int, f *model.Factor)) *Summary {
	return &Summary{tally: tally{chunk: maxChunk}, visit: visit, short: -1}
}

// Report returns the writer's hooks that fill s (one file's write).
func (s *Summary) Report() indexed.WriteReport {
	return indexed.WriteReport{
		Factor: func(w indexed.WrittenFactor) {
			if len(w.Factor.Vars) < 2 && s.short < 0 {
				s.short, s.shortArity = w.A, len(w.Factor.Vars)
			}
			s.add(w.A, w.Rel, w.Entries, w.Factor, w.Cards)
			if s.visit != nil {
				s.visit(w.A, w.Factor)
			}
		},
		Closed: func(w indexed.Written) { s.written, s.closed = w, true },
	}
}

// first fills p's first pass from sum, or, when sum is nil, by a walk of
// the file: the same cardinalities, chunks and absences, and the same
// refusal of the same model (the walk reads the unaries before the
// factors: a forbidden state before a short factor).
func (p *planner) first(sum *Summary) error {
	if sum == nil {
		p.from = "walk"
		return p.walk(p.visit)
	}
	w := &sum.written
	switch {
	case !sum.closed:
		return errors.New("shard: the plan's summary is of a write that did not end")
	case sum.taken:
		return errors.New("shard: the plan's summary was taken by another plan")
	case w.Size != p.sc.Size() || w.StructureCRC != p.sc.StructureCRC() || w.NumVars != p.sc.NumVars() || w.NumFactors != p.sc.NumFactors():
		return fmt.Errorf("shard: %s changed since it was written (%d bytes, structure checksum %08x; written: %d, %08x)",
			p.path, p.sc.Size(), p.sc.StructureCRC(), w.Size, w.StructureCRC)
	case w.ForbiddenVar >= 0:
		return forbiddenError(p.path, w.ForbiddenVar, w.ForbiddenState)
	case sum.short >= 0:
		return shortError(p.path, sum.short, sum.shortArity)
	}
	sum.taken = true
	if p.chunk != sum.chunk {
		// Smaller chunks than the Summary's: walk for them, without the
		// visit, which saw every factor as it was written.
		p.from = "walk for smaller chunks than the summary's"
		return p.walk(nil)
	}
	p.from = "summary"
	p.cards, p.tally = w.Cards, sum.tally
	for k := range p.chunkPos {
		p.chunkPos[k] += w.Records
	}
	sum.tally = tally{}
	return nil
}
