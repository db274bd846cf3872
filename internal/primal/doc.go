// Package primal finds feasible assignments of models whose hard
// constraints (-Inf log-potentials: zeros in the tables of a UAI file,
// unaries at -Inf, logic factors) make most assignments infeasible, such
// as pedigree and linkage models with deterministic CPTs, and improves
// them.
//
// It owns three pieces:
//
//   - Propagator: generalized arc consistency (GAC) over the hard
//     constraints, on per-variable domains kept in one flat slice laid out
//     like model.Unary, with a trail for undo. Dense tables (any arity) and
//     Sequence links are propagated as table constraints over their finite
//     entries (simple tabular reduction, Ullmann, CP 2007, without the
//     tuple-list maintenance), logic kinds by their counting rules. Used
//     once it gives evidence-like domain restrictions (Domains), used
//     during a search it is maintained incrementally (Assign, Mark, Undo).
//   - A backtracking construction: depth-first search with GAC after every
//     assignment (MAC, Sabin and Freuder, 1994), variables chosen by
//     dom/wdeg (Boussemart et al., ECAI 2004) among those in hard
//     constraints, values in the order of a hint (decoded marginals or
//     scores, laid out like model.Unary), restarts with growing node
//     limits; a node budget, a time limit and a context bound it.
//   - Improvement of a feasible assignment: ICM (internal/localsearch),
//     which keeps feasibility since a move to a -Inf state never wins,
//     and large neighbourhood search (Shaw, CP 1998): small connected sets
//     of variables are freed and solved exactly by depth-first branch and
//     bound under propagation, the rest fixed. The same branch and bound
//     over all variables is exhaustive on small models.
//
// Every score it reports is model.Score of the returned assignment.
//
// It knows only package model (and internal/localsearch's ICM kernel):
// nothing of relaxations, decompositions, solvers or how callers obtain
// their hints.
package primal
