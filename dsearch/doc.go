// Package dsearch is distributed branch and bound: the coordinator's queue
// of open subtrees and the worker's subtree solver, over package
// transport.
//
// The coordinator (Run) keeps the open nodes of the search tree as clamp
// sets (the variables a node fixes and their states) with their bounds:
// small state, not the model. It ships the model to each worker once per
// job (model/native's msgpack encoding, as package cluster ships parts)
// with the node solver's settings, then hands out subtrees, best bound
// first: a worker (Serve) searches its subtree with exact.SolveSubtree for
// a bounded budget (a node count and a time slice) and answers with the
// subtree's best assignment, if it beat the incumbent the task carried,
// and the open nodes it did not finish, then takes the next subtree.
//
// The bound the coordinator reports is the largest of the open nodes', of
// the subtrees in flight (each keeps its root's bound until answered) and
// of the incumbent, so it is valid at every moment; the search is optimal
// when no open node and no subtree in flight can beat the incumbent. A
// search can start from an earlier phase's result (Options.Seed: its
// assignment, re-scored, is the first incumbent, and its bound the
// root's, so run's distributed relaxation hands on what it found). A
// worker that falls silent for LostAfter is lost: its subtree goes back to
// the queue with its bound.
//
// Everything that comes from the network is hostile until checked: an
// answer is taken only from the worker its subject names, for the task
// that worker holds, with every index, state and bound checked, and its
// assignment re-scored on the model: an assignment whose score is not the
// one claimed, or an answer malformed in any way, is rejected with a
// logged one-line reason, its subtree requeued and its worker dropped from
// the job. What cannot be checked cheaply (that a bound is valid, that the
// open nodes cover the subtree) rests on the messages' authenticity: a
// deployment seals them with the job key (transport.Sealed, as the job
// protocol's), which the commands wrap around the transport they pass.
// Unsealed, a search certifies nothing from an answer that another answer
// of the same worker to the same task contradicts (confirm.go).
//
// Memory: only a worker holds the model for its part, which here is
// whatever subtree it is given of the whole model. Run's coordinator holds
// the model it ships (to re-score assignments); RunFile's holds no model:
// the workers read the indexed file (.ddx) it names, which it checked and
// binds them to by its size and structure checksum, and it re-scores
// assignments streaming from that file (ground.go) and reads a clamped
// variable's cardinality by one 4-byte read. Both keep the queue of clamp
// sets and the incumbent, whose assignment one answer carried (so no
// larger than the transport's largest message). This package must not
// know dual decomposition's job protocol (package cluster, which
// distributes the relaxation and does not import exact), file formats
// beyond the model's msgpack encoding and the indexed file's reader, or
// the command line.
package dsearch
