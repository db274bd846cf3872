// Package slaves owns the subproblems of dual decomposition: for each factor
// kind, and for coarse slaves (chains with column-generation Viterbi, trees
// with max-product), a MAP solver
// (used by DD-subgradient and by every dual-bound evaluation) and a QUAD
// solver (the Euclidean projection of DD-ADMM, Martins et al. ICML 2011,
// eq. 12), behind one interface, Slave.
//
// A slave sees only its own scope: per-variable score vectors in, marginals
// or a configuration out. It must not know about multipliers, averaging,
// threads or transports; the consensus package drives it.
//
// Layout convention: a slave's per-variable vectors are flattened in scope
// order, variable k occupying Off[k]:Off[k+1] where Off are the prefix sums
// of the scope's cardinalities.
package slaves
