// Package cli owns what the commands (coordinator, worker) share about
// their command line and their stderr: the --log-format flag and the
// logger it selects, the progress display (plain periodic lines, one live
// status line on a terminal, or slog records in JSON), a run's output
// (Output: the progress to the console and to the --trace file, the
// result and traffic lines), duration flags that take a bare number as
// seconds, and the version line.
//
// It knows the solver's progress reports (package solver) and the trace
// file (package trace), and nothing of the algorithms, the model files,
// the transport or the job protocol.
package cli
