// Package consensus owns the numerics of dual decomposition: DD-ADMM
// (Martins et al., ICML 2011, Alg. 2) and DD-subgradient (Alg. 1) over the
// slaves of a decomposition plan. A Worker runs the slave phase and the
// variable phase for the part of the plan it holds; the coordinator loop
// (Coordinate, or Solve in one process) owns the variables shared between
// parts, eta, the dual bound, the best primal (with ICM and a repair for
// hard constraints) and the stopping rule. Both sides run the same
// per-variable code, so a split run equals a single-process one up to the
// order of floating-point sums.
//
// It must not know about file formats, the command line, or how workers are
// reached (WorkerLink hides that: a direct call in process, messages over a
// transport in package cluster).
package consensus
