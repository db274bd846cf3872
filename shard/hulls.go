package shard

import (
	"slices"

	"github.com/ddrun/ddrun/model"
)

// The second pass from the first pass's hulls. The first pass (tally)
// notes every chunk's least and greatest variable, so each worker's
// factors hold variables within a hull: the least and greatest of its
// chunks'. A variable inside one worker's hull alone is held by that
// worker only (or by none), so the boundary lies among the candidates,
// the variables inside two hulls or more; and every factor of a worker
// that holds a candidate lies in a chunk whose own hull meets the
// candidates. In a file in a local order (a grid row by row) the hulls
// of consecutive workers overlap by a few rows, the candidates are those
// rows and the chunks to read again a few per cut: the pass reads those
// chunks and counts each worker's factors over each candidate, instead
// of walking every factor (owners.go). Where the hulls overlap much (a
// file in no local order), there are too many candidates to count, or
// half the chunks or more to read again, and the windowed walk runs (on
// two goroutines; this pass reads on one). What it finds is the walk's: the same
// boundary, the same slaves per worker over it, the same replica entries
// (the chunks' sums; a worker's range is whole chunks) and the same
// variables in no factor (tally.held).

// maxCandidates bounds the candidates' counters (4 bytes each, per worker
// whose hull holds the candidate): 8 MiB for two workers a candidate.
const maxCandidates = 1 << 20

// span is the variables lo..hi, both included.
type span struct{ lo, hi int }

// candidates returns the variables inside two spans or more, as
// increasing disjoint spans; nil with false when they are more than
// limit.
func candidates(hulls []span, limit int) ([]span, bool) {
	type edge struct{ v, d int } // coverage changes by d at v
	edges := make([]edge, 0, 2*len(hulls))
	for _, h := range hulls {
		if h.lo <= h.hi {
			edges = append(edges, edge{h.lo, 1}, edge{h.hi + 1, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return a.v - b.v })
	var out []span
	n, cover, open := 0, 0, false
	for i := 0; i < len(edges); {
		v := edges[i].v
		for ; i < len(edges) && edges[i].v == v; i++ {
			cover += edges[i].d
		}
		switch {
		case cover >= 2 && !open:
			out, open = append(out, span{lo: v}), true
		case cover < 2 && open:
			out[len(out)-1].hi, open = v-1, false
			if n += v - out[len(out)-1].lo; n > limit {
				return nil, false
			}
		}
	}
	return out, true
}

// ownersByHulls is the second pass from the hulls when the candidates
// are at most maxCandidates (p.maxCand when not 0), reporting whether it
// ran.
func (p *planner) ownersByHulls() (bool, error) {
	limit := maxCandidates
	if p.maxCand > 0 {
		limit = p.maxCand
	}
	first := func(w int) int { return p.cut[w] / p.chunk }
	end := func(w int) int { return (p.cut[w+1] + p.chunk - 1) / p.chunk }
	hulls := make([]span, p.workers)
	for w := range p.workers {
		h := span{lo: int(p.chunkLo[first(w)]), hi: int(p.chunkHi[first(w)])}
		for k := first(w) + 1; k < end(w); k++ {
			h.lo, h.hi = min(h.lo, int(p.chunkLo[k])), max(h.hi, int(p.chunkHi[k]))
		}
		hulls[w] = h
	}
	cand, ok := candidates(hulls, limit)
	if !ok {
		return false, nil
	}
	// Each worker's counters: one per candidate in its hull (pieces are
	// the candidates' spans cut to the hull, counts[w][i] piece i's).
	pieces := make([][]span, p.workers)
	spanOf := make([][]int, p.workers) // the candidates' span of each piece
	counts := make([][][]int32, p.workers)
	total := 0
	for w, h := range hulls {
		for c := pieceFrom(cand, h.lo); c < len(cand) && cand[c].lo <= h.hi; c++ {
			s := cand[c]
			pieces[w] = append(pieces[w], span{max(s.lo, h.lo), min(s.hi, h.hi)})
			spanOf[w] = append(spanOf[w], c)
			total += min(s.hi, h.hi) - max(s.lo, h.lo) + 1
		}
	}
	if total > 2*limit {
		return false, nil
	}
	// The chunks to read again: those whose hulls meet a piece of their
	// worker's, in runs of consecutive ones. When they are half of all,
	// the windowed walk (on two goroutines, this pass on one) does it
	// sooner.
	type run struct{ w, k, j int } // worker w's chunks k..j-1
	var runs []run
	again := 0
	for w := range p.workers {
		ps := pieces[w]
		for k := first(w); k < end(w); k++ {
			i := pieceFrom(ps, int(p.chunkLo[k]))
			if i == len(ps) || ps[i].lo > int(p.chunkHi[k]) {
				continue
			}
			again++
			if n := len(runs); n > 0 && runs[n-1].w == w && runs[n-1].j == k {
				runs[n-1].j++
			} else {
				runs = append(runs, run{w, k, k + 1})
			}
		}
	}
	if 2*again > len(p.chunkPos) {
		return false, nil
	}
	for w := range p.workers {
		for _, s := range pieces[w] {
			counts[w] = append(counts[w], make([]int32, s.hi-s.lo+1))
		}
	}
	// Read them again, counting each worker's factors over each candidate.
	for _, r := range runs {
		ps, cs := pieces[r.w], counts[r.w]
		count := func(_ int, f *model.Factor) error {
			for _, v := range f.Vars {
				if i := pieceFrom(ps, v); i < len(ps) && ps[i].lo <= v {
					cs[i][v-ps[i].lo]++
				}
			}
			return nil
		}
		from, to := max(r.k*p.chunk, p.cut[r.w]), min(r.j*p.chunk, p.cut[r.w+1])
		if err := p.sc.ReadRecords(p.chunkPos[r.k], from, to, p.cards.Card, count); err != nil {
			return true, err
		}
	}
	// The boundary: the candidates that two workers' factors hold, in
	// increasing order; then each worker's slaves over them.
	off := make([]int, len(cand)+1) // candidate span c's first holder
	for c, s := range cand {
		off[c+1] = off[c] + s.hi - s.lo + 1
	}
	holders := make([]int8, off[len(cand)])
	for w := range p.workers {
		for i, s := range pieces[w] {
			base := off[spanOf[w][i]] + s.lo - cand[spanOf[w][i]].lo
			for k, c := range counts[w][i] {
				if c > 0 && holders[base+k] < 2 {
					holders[base+k]++
				}
			}
		}
	}
	for c, s := range cand {
		for v := s.lo; v <= s.hi; v++ {
			if holders[off[c]+v-s.lo] >= 2 {
				p.bvars = append(p.bvars, v)
			}
		}
	}
	p.of, p.deg = make([][]int, p.workers), make([][]int, p.workers)
	for w := range p.workers {
		for i, s := range pieces[w] {
			j, _ := slices.BinarySearch(p.bvars, s.lo)
			for ; j < len(p.bvars) && p.bvars[j] <= s.hi; j++ {
				if c := counts[w][i][p.bvars[j]-s.lo]; c > 0 {
					p.of[w] = append(p.of[w], j)
					p.deg[w] = append(p.deg[w], int(c))
				}
			}
		}
	}
	p.entries = make([]int, p.workers)
	for w := range p.workers {
		for k := first(w); k < end(w); k++ {
			p.entries[w] += p.chunkReplica[k]
		}
	}
	p.held.setSize(p.sc.NumVars())
	p.held.missing(func(v int) { p.isolated = append(p.isolated, v) })
	p.held = pageSet{}
	return true, nil
}

// pieceFrom returns the first of the increasing disjoint spans ps that
// ends at v or after (len(ps) when none does).
func pieceFrom(ps []span, v int) int {
	i, _ := slices.BinarySearchFunc(ps, v, func(s span, v int) int { return s.hi - v })
	return i
}
