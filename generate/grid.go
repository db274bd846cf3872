package generate

import (
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// Grids number their variables row-major: the variable at row r, column c is
// r*Width + c. Their edges come row by row: for each row r, first its
// horizontal edges (r,c)-(r,c+1) for c = 0 .. Width-2, then the vertical
// edges (r,c)-(r+1,c) for c = 0 .. Width-1 (none after the last row). Each
// edge becomes one factor, in this order, over [u, v] with u < v.

// gridEdges returns the edges of an h x w grid in the documented order.
func gridEdges(h, w int) [][2]int {
	edges := make([][2]int, 0, h*(w-1)+(h-1)*w)
	eachEdge(h, w, func(uv [2]int) { edges = append(edges, uv) })
	return edges
}

// eachEdge calls fn with the edges of an h x w grid in the documented order.
func eachEdge(h, w int, fn func(uv [2]int)) {
	for r := range h {
		for c := 0; c+1 < w; c++ {
			fn([2]int{r*w + c, r*w + c + 1})
		}
		if r+1 < h {
			for c := range w {
				fn([2]int{r*w + c, (r+1)*w + c})
			}
		}
	}
}

// newGrid returns an empty grid model of l-state variables.
func newGrid(o GridOptions, l int) *model.Model {
	cards := make([]int, o.Height*o.Width)
	for i := range cards {
		cards[i] = l
	}
	return model.New(cards)
}

// Ising returns the random Ising model of Sect. 5.1: an Height x Width grid
// of binary variables with unaries theta_i(0) = 0, theta_i(1) ~ U[-1, 1], and
// on each edge a coupling J ~ U[-Rho, Rho] scoring J*s_i*s_j in spins
// s = 2x-1. Since J*s_i*s_j = 2J*[x_i = x_j] - J, each edge is a Potts
// factor of weight 2J and adds -J to the constant, so Score is the spin
// model's score.
//
// Draws: theta_i(1) for each variable in order, then J for each edge in
// order. Ising ignores Labels and panics if o.Validate fails. It is
// IsingStream(o).Model().
func Ising(o GridOptions) *model.Model {
	mustValid("Ising", o.Validate())
	return IsingStream(o).Model()
}

// Potts returns the random Potts model of Sect. 5.2: an Height x Width grid
// of variables with Labels states (0: DefaultPottsLabels), unaries
// theta_i(x) ~ U[-1, 1] for every state, and on each edge a Potts factor
// scoring w ~ U[-Rho, Rho] when both ends agree. (The paper draws the edge
// potentials from U[-10, 10] on the diagonal: Rho = 10.) With o.Pair set
// the edges are truncated linear or quadratic terms of weight w instead.
//
// Draws: the unaries variable by variable, state by state, then w for each
// edge in order. Potts panics if o.Validate fails. It is
// PottsStream(o).Model().
func Potts(o GridOptions) *model.Model {
	mustValid("Potts", o.Validate())
	return PottsStream(o).Model()
}

// fill draws each entry of v from U[-b, b].
func fill(r *rand.Rand, v []float64, b float64) {
	for i := range v {
		v[i] = uniform(r, -b, b)
	}
}
