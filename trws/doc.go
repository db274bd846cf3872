// Package trws is sequential tree-reweighted message passing (TRW-S) for
// MAP inference in pairwise discrete models, in the max-sum (score)
// convention of package model.
//
// The algorithm is Kolmogorov's (V. Kolmogorov, "Convergent tree-reweighted
// message passing for energy minimization", IEEE TPAMI 28(10), 2006), as
// summarised in Table 1 of M. P. Kumar and P. H. S. Torr, "Efficiently
// solving convex relaxations for MAP estimation", ICML 2008: block
// coordinate ascent on the dual of the local-polytope (LP-S) relaxation of
// Wainwright et al. (IEEE Trans. Inf. Theory 51(11), 2005), with the
// variables in a fixed order, the model split into monotonic chains
// (weights gamma_s = 1/max(#edges to earlier nodes, #edges to later nodes))
// and alternating forward and backward passes. In scores the dual is an
// upper bound on the MAP score that never increases (a lower bound on the
// energy that never decreases, in the papers' terms); it converges to a
// point satisfying weak tree agreement, which on graphs with cycles need
// not be an optimum of the LP. The labelling is the sequential rule of
// Kolmogorov's Sect. 5 (Kumar and Torr, eq. 14).
//
// The bound reported after every pass is the exact value of the chain dual
// at the current messages (see pass.go for the derivation); hard
// constraints (-Inf potentials) are handled exactly, without penalties,
// by treating states with an infinite reparameterised unary as dead.
//
// With Options.Cycles the dual also holds the cycle inequalities of every
// triangle and chordless square (TRW-S(LP-C), Kumar and Torr, ICML 2008,
// Table 2; see cycles.go): after every iteration each cycle's small LP,
// problem (12), is solved exactly (package internal/smalllp) on the exact
// max-marginals of the chains through its edges, and its solution moves
// into the edge tables and a constant. The bound stays exact and valid.
// With Options.SOC the same sweeps also step the SOC clique constraints of
// every triangle (Kumar and Torr, Sect. 4; soc.go and docs/soc.md).
//
// Layout and cost (graph.go, pass.go): Kolmogorov's MRFEnergy layout in
// flat arrays: one message per edge (the one into the node processed next),
// edges sorted by their earlier end, so a pass streams through memory,
// prefetching the messages and tables of the node eight turns ahead
// (pass.go); branch-free max-plus kernels, unrolled whole node steps for
// nodes of 2, 3, 4 or 8 states with dense or Potts edges, with SSE2 send
// steps along dense edges for 4 and 8 and O(K) ones along Potts edges
// (kernels.go: the same iterates bit for bit); the labelling and
// its score fused into the forward pass; an iteration allocates nothing.
// Unlike Kolmogorov's, the dense tables are not copied beside the messages:
// TRW-S reads the model's tables where they lie (one pointer per edge) and
// never writes them; only an edge whose factor lists its variables in the
// other order, or whose pair has several factors, gets a table of its own
// (graph.go; on a grid read from a UAI file none on one thread, one per
// separator node with threads). TRW-S(LP-C) rewrites tables, so it copies
// them all beside the messages. Potts edges (both signs) and single
// truncated linear or quadratic factors (model.TruncLinear, TruncQuad) keep
// their structure: O(L) messages (pairterm.Message, Felzenszwalb and
// Huttenlocher's distance transforms), no table. Memory: per edge max(L_u,
// L_v) message entries in float64 plus 36 bytes of indices (a copied table
// adds L_u*L_v entries); per node about 40 bytes besides its unaries (the
// chain weights come from the degrees, not from arrays). On the 4-label
// dense grids of scripts/bench-trws.sh the whole process (model, reading
// and TRW-S) peaks at 84 MB for 300x300 (Kolmogorov's program 76 MB) and
// 703 MB for 1000x1000 (his 817); before model.Factor shrank from 128 to
// 80 bytes it was 91 and 809 (115 and 1054 with the tables copied). What
// remains above his on 300x300 is the coordinator binary's start-up: 21 MB
// on a 2x2 grid against his 3 MB (it links the NATS server, Raft,
// Prometheus and the plotting fonts); above start-up ddrun takes 0.86 of
// his memory there and 0.95 on the 8-label 100x100 grid.
//
// Messages stay float64. Storing them as float32 would keep the bound valid
// only with a correction: after rounding a message M to M' the chain maxima
// no longer collapse onto the sum of the c_st of the pass (pass.go); the
// bound becomes sum_st (c_st + max_j (M_st(j) - M'_st(j))), or with M'
// rounded upwards, sum c_st exactly as now, still a valid upper bound but
// no longer the exact dual value at the stored messages, and its
// monotonicity lost by up to the rounding. It would save max(L_u, L_v)*4
// bytes per edge (10% of a 4-label dense edge, 6% of an 8-label one), and
// with prefetching (pass.go) memory waits are only about a quarter of an
// iteration on a 300x300 4-label dense grid (BenchmarkNodeCost: about 60
// ns per node and iteration in cache, 80 out of it), so it would gain a
// few per cent at the price of an inexact bound: it is not done.
//
// Threads (order.go): Options.Threads > 1 runs exact TRW-S in a
// partitioned node order (parts in parallel, their separator on one
// thread), so the bound stays exact, valid and monotone, and the results
// deterministic for a given thread count. The passes are handed to the
// worker goroutines by spinning signals (handoff.go), not through the
// scheduler: on 2 otherwise idle cores 2 threads take an iteration of the
// 4-label dense grids 1.9 to 2 times faster than one (300x300: 7.6 -> 3.8
// ms; 1000x1000: 84 -> 45 ms, where memory bandwidth is shared).
//
// Distributed TRW-S (coordinator run) is not this order spread over
// processes: that would need two barriers per pass and the separator's
// messages shipped both ways every pass. Package dtrws instead runs this
// package's TRW-S on each part of a split model (Part, part.go) and makes
// the parts agree on their shared variables by Lagrange multipliers, so the
// workers exchange only boundary min-marginals once per outer iteration and
// the dual stays the sum of the parts' exact bounds
// (docs/distributed-trws.md).
//
// Stopping (Options): with Tol == 0 only the limits (MaxIter, TimeLimit),
// cancellation, a proof of optimality (dual <= primal) or infeasibility stop
// a run; the bound-stall test (BoundTol over BoundWindow iterations) is
// made only when Tol > 0. With Cycles, the cycle sweeps start when TRW-S
// slows down (CycleStart) or stalls, whatever Tol.
package trws
