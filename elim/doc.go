// Package elim solves MAP exactly by bucket (variable) elimination when
// the model's induced width lets its tables fit in memory, and otherwise
// bounds it by mini-bucket elimination and searches it by depth-first
// branch and bound guided by the mini-bucket heuristic.
//
// Bucket elimination (Dechter, "Bucket elimination: a unifying framework
// for reasoning", Artificial Intelligence 113, 1999, the max-product
// "elim-mpe" of section 4): along an elimination order, every function goes
// into the bucket of its first eliminated variable; a bucket's functions
// are summed (log-potentials) and its variable maxed out, and the message
// over the remaining variables goes to the bucket of their first eliminated
// variable. The last message is the MAP score; the assignment follows by
// choosing, in the reverse order, the best state of each variable given
// the later ones (the argmax of its bucket's functions).
//
// Mini-buckets (Dechter and Rish, "Mini-buckets: a general scheme for
// bounded inference", JACM 50(2), 2003, MBE(i)): a bucket whose joint scope
// is too large is split into mini-buckets of bounded scope, each maxed out
// separately; the sum of their messages bounds the bucket's exact message
// from above, so the final value is an upper bound (the dual). Depth-first
// branch and bound along the reverse elimination order with the
// mini-bucket messages as heuristic (BB-MBE, Kask and Dechter, "A general
// scheme for automatic generation of search heuristics from specification
// dependencies", Artificial Intelligence 129, 2001, section 4) gives g + h
// at every node: the original functions fully assigned plus the messages
// sent from buckets of unassigned variables into buckets of assigned ones,
// an upper bound on every completion; it prunes a node whose bound does
// not beat the incumbent, and it is exact when the search completes.
//
// Tables are flat (float64 values, last scope variable fastest, -Inf for
// hard constraints); the elimination loops walk them with strides and
// allocate nothing per entry. The elimination order is greedy min-fill or
// min-weight, whichever gives the smaller tables, and the memory and work
// of a run are estimated from it before any table is allocated.
//
// It knows package model and the solver vocabulary (Reduce, Finish), and
// internal/primal for the first incumbent of the search; it must not know
// relaxations (consensus, trws, exact), file formats or the command line.
package elim
