// Package convexmp solves the local-polytope LP relaxation of MAP inference by
// convex max-product (block coordinate descent on its dual) and, on demand,
// by the globally convergent steepest eps-descent of
//
//	A. G. Schwing, T. Hazan, M. Pollefeys, R. Urtasun, "Globally Convergent
//	Dual MAP LP Relaxation Solvers using Fenchel-Young Margins", NIPS 2012.
//
// Equation, claim and corollary numbers below are the paper's. Scores are
// maximised, as everywhere in ddrun.
//
// # The dual and convex max-product
//
// The LP relaxation (eq. 2) maximises sum_i b_i.theta_i + sum_a b_a.theta_a
// over locally consistent beliefs. Its re-parametrised dual (eq. 3, written
// with the sign convention of Claim 1) is
//
//	q(lam) = sum_i max_{x_i} [theta_i(x_i) - sum_{a in N(i)} lam_{i->a}(x_i)]
//	       + sum_a max_{x_a} [theta_a(x_a) + sum_{i in N(a)} lam_{i->a}(x_i)],
//
// an upper bound on the LP optimum, hence on the MAP score, for every lam.
// Convex max-product (the update rules after eq. 3) minimises q exactly over
// the block of messages of one variable at a time; a sweep visits every
// variable once. The dual never increases, but q is not smooth and the sweeps
// can stop in a corner above the LP optimum (Sect. 2). Plain mode
// (Options.EpsDescent false) stops there: when a sweep lowers the dual by less
// than StallTol*max(1, |q|).
//
// # Steepest eps-descent
//
// Claim 1: the subgradients of q are the marginalisation disagreements
// d_{i->a}(x_i) = sum_{x_a \ x_i} b_a(x_a) - b_i(x_i) of beliefs supported on
// the maximisers of each max-function. The eps-subdifferential (eq. 5) adds
// the beliefs within an eps-margin of the maximum (eq. 6, the eps-margin
// Fenchel-Young duality); Claim 3 approximates it by the sum of the
// max-functions' own eps-subdifferentials, so that it is the image of a
// product of small polytopes
//
//	P_r = { b_r in the simplex : b_r . thetaHat_r >= max thetaHat_r - eps }
//
// under the disagreement map. Corollary 2: the element of least norm, found
// by the quadratic program min ||A b||^2 over b in prod_r P_r, is either 0 --
// then q is within (|V|+|E|)*eps of the LP optimum and the beliefs b are
// consistent, primal-feasible, and within (|V|+|E|)*eps of optimal -- or
// minus it is a direction along which q drops by more than eps (Claim 2).
//
// With EpsDescent, the run switches from convex max-product to this method
// whenever a sweep gains less than the current eps (the paper's switching
// rule, with eps = Eps0 = 0.01 at first), takes one eps-descent step, and
// returns to sweeps; both monotonically decrease the same dual. Whenever 0 is
// in the eps-subdifferential, eps shrinks by EpsShrink; the run ends with
// status Converged once that happens at EpsMin (or when no descent of more
// than EpsMin is found there). The beliefs of that last QP are the
// recovered primal solution (Corollaries 1 and 2).
//
// Implementation choices where the paper leaves freedom or uses outside
// tools:
//
//   - The QP (the paper used Gurobi) is solved here by accelerated projected
//     gradient (FISTA with function-value restarts) on prod_r P_r, with an
//     exact Euclidean projection onto each P_r (a simplex cut by one
//     half-space: two multipliers, found by safeguarded Newton steps on a
//     piecewise-linear equation) and the step 1/L, L = lambda_max(A^T A) by
//     power iteration. No external solver is used.
//   - A direction is certified when the Frank-Wolfe gap of the QP (whose
//     linear minimisation over P_r walks the lower convex hull of the points
//     (gap_j, gradient_j)) is below ||d||^2/2: then every element g of the
//     set has g.d > 0, which is what Claim 2 needs. Uncertified directions
//     (QPIters reached) are still tried; a step is only taken if the dual
//     decreases, so the run stays monotone.
//   - The line search is exact (the paper used backtracking): q along the
//     direction is convex and piecewise linear, minimised by bisection on
//     its right derivative.
//   - "0 is in the set" means a root-mean-square disagreement below 1e-9.
//
// # Models
//
// Solve works on any model: it calls model.Reduce, turns every factor into a
// dense table (model.DenseTable; tables above Options.MaxTable entries are an
// error), splits Sequence factors into their pairwise links (the local
// polytope of a chain projects onto that of its links, so the LP is
// unchanged), removes the states no feasible configuration supports
// (generalised arc consistency, which does not change the LP either; no
// state left means Infeasible), and folds factors over fewer than two free
// variables into unaries and the constant.
//
// # Results
//
// Result.Dual is the lowest dual value reached, a valid upper bound on the
// MAP score (also at every Progress report). Result.Primal is the exact score
// (m.Score) of Result.Assignment, the best of the decoded assignments: the
// argmax of the re-parametrised unaries every DecodeEvery sweeps and after
// every eps-descent step, and the argmax of recovered beliefs, each improved
// by ICMSweeps sweeps of iterated conditional modes. Result.Relaxed is the LP
// objective of the best locally consistent beliefs found (recovered beliefs
// whose largest disagreement is below 1e-6, or the integral beliefs of the
// assignment). Status Optimal means Dual - Primal <= Tol*max(1, |Primal|).
// Progress.Eta carries the current eps (0 before eps-descent starts) and
// Progress.DualRes the root-mean-square norm of the last eps-descent
// direction.
//
// # The paper's experiment
//
// TestSpinGlassExperiment (opt-in: DDRUN_LONG=1) reproduces Fig. 1a: 10x10
// spin glasses with 3 states, unaries and edge weights from N(0,1), edge
// tables w*(+1 on the diagonal, -1 off it), 1000 models; plain convex
// max-product (at most 10000 sweeps, stopping at its fixed point) against
// eps-descent. Measured with seed 2012 on 2 shared cores (two solves in
// parallel, 3m24s in all):
//
//	plain dual above the eps-descent dual by > 1e-6:  639 (63.9%)
//	                                         > 1e-4:  599 (59.9%)
//	                                         > 0.01:  552 (55.2%)
//	                                         > 0.2:   147 (14.7%)   (the paper's "hard" cut)
//	eps-descent at the LP optimum: 1000 of 1000 (Dual - Relaxed <= 2.2e-5,
//	  Relaxed being the value of consistent beliefs); never above plain by
//	  more than 6e-6
//	time per model: plain 0.059 s mean; eps-descent 0.349 s mean, 0.276 s
//	  median, 0.648 s p90, 2.64 s max
//
// The paper reports about 20% of the models with a positive difference; more
// of these models stop short here (plain convex max-product sweeps the
// variables in order from lam = 0; on 20 of the models, alternating or
// random orders stopped at similar values). With every pairwise entry drawn from N(0,1)
// instead (DDRUN_SG_FULL=1, 300 models) the fraction is 16.7% (> 1e-6),
// 12.3% (> 0.01) and 1.7% (> 0.2), all 300 again solved to the LP optimum.
// TestSpinGlassOracle checks a few of these models against the simplex LP
// (about a minute each).
package convexmp
