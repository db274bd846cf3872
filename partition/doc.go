// Package partition decides how a factor graph is split into slaves: which
// factors each slave owns, in what order it sees its variables, and what
// shape it has (a Plan of Slaves). Fine decompositions give one slave per
// factor (PerFactor, AD3 eq. 5); coarse ones group the pairwise factors
// into chains or trees (Chains, Trees) so that each slave is solved
// exactly by dynamic programming.
//
// It must not know how slaves are solved, how multipliers are updated, how
// workers talk, or where slaves run: placing the slaves of a plan on
// workers is package partition/multilevel's.
package partition
