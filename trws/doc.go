// Package trws is sequential tree-reweighted message passing (TRW-S) for
// MAP inference in pairwise discrete models, in the max-sum (score)
// convention of package model.
//
// The algorithm is Kolmogorov's (V. Kolmogorov, "Convergent tree-reweighted
// message passing for energy minimization", IEEE TPAMI 28(10), 2006), as
// summarised in Table 1 of M. P. Kumar and P. H. S. Torr, "Efficiently
// solving convex relaxations for MAP estimation", ICML 2008: block
// coordinate ascent on the dual of the local-polytope (LP-S) relaxation of
// Wainwright et al. (IEEE Trans. Inf. Theory 51(11), 2005), with the
// variables in a fixed order, the model split into monotonic chains
// (weights gamma_s = 1/max(#edges to earlier nodes, #edges to later nodes))
// and alternating forward and backward passes. In scores the dual is an
// upper bound on the MAP score that never increases (a lower bound on the
// energy that never decreases, in the papers' terms); it converges to a
// point satisfying weak tree agreement, which on graphs with cycles need
// not be an optimum of the LP. The labelling is the sequential rule of
// Kolmogorov's Sect. 5 (Kumar and Torr, eq. 14).
//
// The bound reported after every pass is the exact value of the chain dual
// at the current messages (see pass.go for the derivation); hard
// constraints (-Inf potentials) are handled exactly, without penalties,
// by treating states with an infinite reparameterised unary as dead.
//
// With Options.Cycles the dual also holds the cycle inequalities of every
// triangle and chordless square (TRW-S(LP-C), Kumar and Torr, ICML 2008,
// Table 2; see cycles.go): after every iteration each cycle's small LP,
// problem (12), is solved exactly (package internal/smalllp) on the exact
// max-marginals of the chains through its edges, and its solution moves
// into the edge tables and a constant. The bound stays exact and valid.
package trws
