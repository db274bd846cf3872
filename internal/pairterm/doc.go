// Package pairterm owns the structured pairwise terms over two variables of
// equal cardinality L (Potts, truncated linear, truncated quadratic) and
// their max-product messages in O(L) where a method exists:
//
//   - Potts, theta(x, y) = W [x = y], W of either sign, by the top two
//     entries of the incoming vector (Felzenszwalb and Huttenlocher,
//     "Efficient belief propagation for early vision", IJCV 70(1), 2006,
//     Sect. 3.1, extended to W < 0);
//   - truncated linear, theta(x, y) = -W min(|x-y|, T): for W >= 0 the
//     two-pass distance transform (same paper, Sect. 3.2) and truncation by
//     the global maximum; for W < 0 (the term favours distant states)
//     sliding-window maxima (van Herk / Gil-Werman) for the distances below
//     the truncation and prefix/suffix maxima beyond it;
//   - truncated quadratic, theta(x, y) = -W min((x-y)^2, T): for W >= 0 the
//     lower envelope of parabolas (Sect. 3.3, written for maxima) and
//     truncation by the global maximum; for W < 0 the window of distances
//     below the truncation is scanned directly, O(L min(L, sqrt T)) (no
//     O(L) method is used: see quadFar), and the rest by prefix/suffix
//     maxima.
//
// At L = 4 a materialised table's O(L^2) loop is as fast as or faster than
// these methods for the truncated kinds (BenchmarkMessage); from L = 16 on
// they win.
//
// Scores are maximised (log-potentials). It knows nothing of models,
// factors or algorithms: callers (TRW-S messages, the dual-decomposition
// slaves' MAP oracles) hand it vectors and scratch space.
package pairterm
