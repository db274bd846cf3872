// Package model owns the factor graph that ddrun solves: discrete variables
// with unary log-potentials, and factors of several kinds (dense tables,
// binary pairs, Potts, and logic constraints on binary variables).
//
// Scores are maximised. The score of an assignment is the model constant plus
// the sum of its unary and factor log-potentials; -Inf marks a violated hard
// constraint. The package defines the data, validation, exact scoring and the
// transformations that prepare a model for a solver (evidence, domain
// reduction); file formats live in the sub-packages uai and native.
//
// It must not know about solvers, slaves, transports or the command line.
package model
