// Package partition decides how a factor graph is split into slaves: which
// factors each slave owns and in what order it sees its variables. Fine
// decompositions give one slave per factor (AD3 eq. 5); coarse ones group
// factors into chains or trees so that each slave is solved exactly by
// dynamic programming.
//
// It must not know how slaves are solved, how multipliers are updated, or
// where slaves run.
package partition
