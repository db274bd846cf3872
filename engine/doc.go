// Package engine owns "which algorithm, with which settings": the settings
// of a run that every front end fills (the command line's flags, the job
// service's query parameters, the node settings that distributed branch
// and bound ships to its workers), their validation and the defaults that
// depend on one another (Settings.Settle), the choice of the algorithm by
// model class (Choose), the table of algorithms and the build of the
// solver (Prepare, Job.Bind), the run in this process (Job.Solve, Solve:
// the algorithm, the anytime phases, or --exact's elimination and branch
// and bound) and the result schema that --json prints, a Raft leader
// records and the job service returns (Result).
//
// It sits among the algorithms, above package anytime and below the
// distributed runtime: it must not know the transport, the cluster's job
// protocol, the files a model comes from or how a front end prints. Errors
// about settings are *Error values that name the setting by its name
// (Name); each front end writes those names its own way (Flag, Param).
package engine
