package partition

import "github.com/ddrun/ddrun/model"

// Trees is a coarse decomposition into trees: every pairwise factor (see
// IsPairwise) is a link of exactly one Tree slave, and every other factor
// is a Single slave of its own, as in PerFactor. The trees come first, then
// the Single slaves in factor order. The output is deterministic.
//
// The pairwise edges are covered by spanning forests taken one after the
// other: the first is a spanning forest of the whole pairwise graph, each
// next one a spanning forest of the edges not used yet, until none is
// left. Each tree of a forest (with at least one edge) is one Tree slave,
// its variables in breadth-first order from its root (the lowest-numbered
// variable of the tree that still had unused edges), so Parent[k] <= k. Two
// factors on the same pair of variables land in different forests.
//
// When the pairwise factors form exactly an H x W lattice (H, W >= 2) on
// variables numbered row-major, as package generate builds them, the first
// forest is the comb of all horizontal edges plus column 0 (one spanning
// tree, its variables in row-major order) and the second the other W-1
// columns (one Tree slave each, top to bottom).
//
// Each forest costs time linear in the variables and edges left, and every
// variable with unused edges loses at least one to each forest, so there
// are at most max-degree forests (a lattice takes 2 or 3, a complete graph
// on n variables about n/2, which its arboricity n/2 requires anyway).
//
// Trees fails only when a pairwise factor's scope is out of range or
// repeats a variable, or the model has more than 2^30 factors.
func Trees(m *model.Model) (Plan, error) { return coarse(m, gridTrees, forestCover) }

// gridTrees appends the comb of lattice l (all rows, joined by column 0)
// and then its columns 1 .. w-1, as Tree slaves.
func gridTrees(g *pairGraph, l *gridLayout, out []Slave, arena *slaveArena) []Slave {
	nv := l.h * l.w
	vars, facs, par := arena.take(nv), arena.take(nv-1), arena.take(nv-1)
	for v := range nv {
		vars[v] = v
		if v == 0 {
			continue
		}
		if v%l.w != 0 { // left neighbour
			par[v-1] = v - 1
			facs[v-1] = int(g.fac[l.hor[v-1]])
		} else { // column 0: the variable above
			par[v-1] = v - l.w
			facs[v-1] = int(g.fac[l.ver[v-l.w]])
		}
	}
	out = append(out, Slave{Shape: Tree, Vars: vars, Factors: facs, Parent: par})
	for c := 1; c < l.w; c++ {
		vars, facs, par := arena.take(l.h), arena.take(l.h-1), arena.take(l.h-1)
		for r := range l.h {
			v := r*l.w + c
			vars[r] = v
			if r+1 < l.h {
				facs[r] = int(g.fac[l.ver[v]])
				par[r] = r
			}
		}
		out = append(out, Slave{Shape: Tree, Vars: vars, Factors: facs, Parent: par})
	}
	return out
}

// forestCover appends a decomposition of g's edges into spanning forests,
// one Tree slave per tree with an edge, and uses up g's edges. Each round
// runs a breadth-first search from every variable with unused edges not yet
// reached in that round, in index order, over the unused edges; the search
// tree's edges are used up.
func forestCover(g *pairGraph, out []Slave, arena *slaveArena) []Slave {
	// seen[v] == round once v is reached in that round (rounds start at 1).
	seen := make([]int32, g.n)
	active := make([]int32, 0, g.n) // variables with unused edges
	for v := range int32(g.n) {
		if g.cnt[v] > 0 {
			active = append(active, v)
		}
	}
	// The current tree, in BFS order: at most len(active) variables.
	vars := make([]int32, 0, len(active))
	par, facs := make([]int, 0, len(active)), make([]int, 0, len(active))
	for round := int32(1); len(active) > 0; round++ {
		for _, s := range active {
			if seen[s] == round || g.cnt[s] == 0 {
				continue
			}
			seen[s] = round
			vars, par, facs = append(vars[:0], s), par[:0], facs[:0]
			for k := 0; k < len(vars); k++ {
				u := vars[k]
				base := g.off[u]
				// Backwards, so that remove (which moves the list's last
				// entry into the freed slot) only moves entries already seen.
				for i := g.cnt[u] - 1; i >= 0; i-- {
					w := g.nbr[base+i]
					if seen[w] == round {
						continue
					}
					h := g.adj[base+i]
					seen[w] = round
					g.remove(h >> 1)
					vars = append(vars, w)
					par = append(par, k)
					facs = append(facs, int(g.fac[h>>1]))
				}
			}
			vs, ps, fs := arena.take(len(vars)), arena.take(len(par)), arena.take(len(facs))
			for k, v := range vars {
				vs[k] = int(v)
			}
			copy(ps, par)
			copy(fs, facs)
			out = append(out, Slave{Shape: Tree, Vars: vs, Factors: fs, Parent: ps})
		}
		n := 0
		for _, v := range active {
			if g.cnt[v] > 0 {
				active[n] = v
				n++
			}
		}
		active = active[:n]
	}
	return out
}
