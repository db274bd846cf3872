// Package generate builds seeded synthetic models, reproducing the
// experiments of Martins et al., "An Augmented Lagrangian Approach to
// Constrained MAP Inference" (ICML 2011), Sect. 5.1 and 5.2, plus random
// models with logic factors:
//
//   - Ising: a binary grid with random unaries and mixed spin couplings
//     (Sect. 5.1);
//   - Potts: a multi-valued grid with random unaries and Potts couplings
//     (Sect. 5.2);
//   - Logic: random binary models with every logic factor kind, feasible by
//     construction.
//
// Every generator draws from math/rand/v2's PCG source seeded by the
// options' Seed (GaussianUnaries and DenseGrid, for tests that draw many
// models from one source, from the caller's), in a documented order, so the
// same options give the same model on every platform. Generators panic on options their Validate method
// rejects; call it first when the options come from a user.
//
// The package only builds models. It must not know about solvers, file
// formats, transports or the command line.
package generate
