// Package anytime chooses and sequences ddrun's algorithms on one model so
// that a run uses its whole time budget and keeps improving until the gap
// closes: exact bucket elimination first when its tables fit a memory
// budget (package elim; Options.Eliminate), then the relaxation (TRW-S
// for pairwise models, DD-ADMM otherwise;
// Choose), then, while the gap stays open, a tighter relaxation (cycle
// constraints), then branch and bound, each phase starting from what the
// earlier ones found (the incumbent, the bound, ADMM's multipliers).
//
// Validity across phases: every phase bounds the MAP score of the same
// model (a tightened model has the same score for every assignment, a
// tighter LP only lowers the bound), so the minimum of the phases' duals is
// a valid upper bound, and it is what the run reports; every primal is
// rescored on the original model (model.Score) and the best one is kept.
// The run is Optimal as soon as that bound and that primal meet within
// Tol (solver.Closed), and the phase that closed the gap is reported.
//
// The tightening follows the cycle-constraint idea of Sontag et al.
// ("Tightening LP relaxations for MAP using message passing", UAI 2008)
// and Kumar and Torr (ICML 2008, TRW-S(LP-C)); the search is package
// exact's best-first branch and bound over the dual bound. The phases are
// seams (Options.Primal, Options.Tighten, Options.Node) that better
// primal heuristics, incremental cycle pursuit or a parallel search plug
// into.
//
// It owns the orchestration only: it must not know file formats, the
// command line (package cmd/coordinator wires flags to Options), how
// progress is printed, or the distributed runtime.
package anytime
