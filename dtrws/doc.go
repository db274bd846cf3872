// Package dtrws is distributed TRW-S: dual decomposition of a pairwise
// model into K parts, each solved by warm-started TRW-S (package trws,
// trws.Part), whose copies of the shared (boundary) variables are made to
// agree by Lagrange multipliers on their unaries.
//
// The decomposition (split.go) gives every factor to exactly one part
// (the part owning the factor's first variable; variables are owned in
// contiguous ranges), so the parts' models add up to the model once the
// unaries of a variable shared by c parts are split between its copies,
// 1/c each, plus multipliers lambda_p(v, .) with sum_p lambda_p(v, .) = 0.
// The reported dual is the sum of the parts' TRW-S bounds; since each is
// an upper bound on its part's maximum and the parts' scores add up to the
// model's score for every assignment, it is an upper bound on the MAP score
// at every iteration, whatever the multipliers (Komodakis, Paragios and
// Tziritas, PAMI 2011, Sect. 3). The multiplier update (solve.go) is the
// boundary consistency step of Schwing, Hazan, Pollefeys and Urtasun
// ("Distributed Message Passing for Large Scale Graphical Models", CVPR
// 2011): every copy's reparameterised unary is moved half way (Options.Step)
// to its share, in proportion to its chain count, of the sum over the
// copies; the full step is TRW-S's own node averaging (Kolmogorov 2006,
// Fig. 3) across the parts.
// docs/distributed-trws.md derives it.
//
// The parts run through Link (link.go), a flat-slice seam (an order in:
// multiplier changes, an iteration count, a candidate's boundary states;
// bound, boundary beliefs, the candidate's score out) so that a cluster
// can carry them to workers. The coordinator (Run) knows only the Seam:
// the shared variables' cardinalities and which parts hold their copies.
// Solve runs the parts in process, one goroutine per part (at most
// Threads at once), and its results depend on Parts only, never on
// Threads.
//
// The primal: the coordinator picks every shared variable's state (the
// largest summed belief); each part completes it with its interior (its
// last forward pass, moved by ICM with the boundary fixed) and scores its
// share, so the sum is the exact score of one assignment; the best is kept
// by the parts and polished at the end.
//
// The package knows models, the solver result and package trws; it must
// not know the cluster, transport, or how parts are placed on machines.
package dtrws
