// Package oracle holds slow, simple, independent reference solvers for tests:
// exact MAP by brute-force enumeration ([BruteForceMAP]), the optimum of the
// local-polytope LP relaxation solved with a general-purpose simplex
// ([LocalPolytopeLP]), the optimum of the local polytope cut by the SOC
// clique constraints of every triangle ([LocalSOC], by tangent-plane cuts
// on the same simplex), a generator of random tiny models
// ([RandomTinyModel]) to feed both, every joint assignment for checks by
// enumeration ([Assignments]), evidence applied as forbidden states
// ([Clamped]), and the real instances with their evidence
// ([Instance]; their optima are internal/instances.Optima). [BruteMAP],
// [LP] and [Toulbar2] are the references for a test, failing (or, without
// toulbar2, skipping) it on an error, as [ReadMPE] does, which reads a
// run's --out. [ReadBack] checks a model file format's reader against
// its writer by scores, the body of wcsp's and cfn's read fuzz tests.
//
// The references share no code with the solver: they read the model only
// through package model's definitions (Score, FactorScore, LogicSatisfied), so
// a bug in a slave, in the consensus engine or in a reduction cannot hide in
// them. They are meant for models small enough to enumerate or to write down
// as a dense LP; they check sizes and return errors beyond that.
//
// This package must never be imported by the solver itself (non-test code
// outside internal/oracle); it exists only to be compared against.
package oracle
