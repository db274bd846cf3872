// Package remote runs distributed TRW-S (package dtrws) on workers over
// package transport: the coordinator's dtrws.Link to a worker's part
// (Run) and the worker's side (Serve), which launch.ServeWorker runs
// beside the other modes on the same worker processes.
//
// The job is sharded (package shard): the coordinator plans an indexed
// model file (.ddx) into factor ranges (shard.PlanLayout) and keeps only
// the boundary, from which it builds the dtrws.Seam; each worker reads its
// part by byte ranges as a model (shard.LoadPiece: the unary of a boundary
// variable divided between the parts that hold it; from the file, or
// through the bytes it received when WorkerOptions.Receive says so) and
// runs it as a dtrws.LocalLink. Every outer iteration is one order to each worker and
// one answer back: the multiplier changes and a candidate's boundary
// states in, the part's bound, its boundary beliefs and its score of the
// candidate out (O(the part's boundary) bytes each way). At the end the
// coordinator gathers the parts' kept labels into the assignment.
//
// Everything from the network is hostile until checked: an answer is
// taken only on the answer subject of the worker that holds the part, for
// the job's coordinator id and the order outstanding, with every slice's
// length, every number's finiteness (-Inf allowed where a state is dead,
// never NaN or +Inf) and every chain count checked; a worker checks an
// order the same way (dtrws.LocalLink checks the states' ranges) and a
// spec (shard.DecodeSpec, the file's size and checksum). What cannot be
// checked cheaply (that a bound is valid, that an interior label is in
// range) rests on the messages' authenticity: a deployment seals them
// with the job key (transport.Sealed).
//
// No order is resent: a worker that does not answer within StepTimeout
// fails the run (no spare, no checkpoint on this path yet).
//
// This package must not know dual decomposition's job protocol (package
// cluster) or its stores, file formats but the indexed model file's
// (through shard), or the command line.
package remote
