// Package solver is the vocabulary every MAP algorithm of ddrun shares: the
// Result of a run and the Progress it reports, the Status it stops with,
// the Limits every run takes (iterations, time, gap tolerance, progress
// rate) with their validation, the checks every Options.Validate is made
// of (FirstBad over Want, WantAtLeast, ...: one wording of a bad option),
// and the prologue and epilogue that wrap an algorithm: Prepare (validate
// the options and the model, then Reduce: apply the evidence, fold
// one-variable factors, report an infeasible model) and Finish (map the
// reduced result back and rescore the assignment on the original model, so
// that a reported primal is always the exact score of the reported
// assignment); Argmax decodes an assignment from beliefs.
//
// The algorithms (packages consensus, trws, convexmp, exact) import it; it must
// not know any of them, nor file formats, the command line or transports.
// Option errors name the Go field (OptionError), never a command-line flag:
// the command maps fields to its flags.
package solver
