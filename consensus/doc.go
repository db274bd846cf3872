// Package consensus owns the dual-decomposition master: it compiles a model
// into slaves, runs DD-ADMM (Martins et al., ICML 2011, Alg. 2) over them,
// averages replicas, updates multipliers and the penalty eta, and tracks the
// dual bound, the best integer primal and the gap.
//
// It must not know about file formats, the command line or how slaves are
// placed on machines.
package consensus
