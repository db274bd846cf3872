// Package trace owns the convergence trace of a run: one row per reported
// iteration (iteration, seconds, dual, primal, gap, residuals, eta, branch
// and bound nodes) and its CSV form, which `--trace FILE` writes, the job
// service serves and `coordinator plot` reads.
//
// It knows the solver's progress reports (package solver) and nothing of
// the algorithms, the transport or the files' consumers.
package trace
