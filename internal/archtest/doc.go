// Package archtest holds the test that keeps the package map of
// docs/architecture.md true: every package of the module has a place in
// its order, and imports only packages placed before it, with the extra
// rules the map states (transport knows nothing of ddrun; TRW-S and convex
// max-product do not depend on dual decomposition; no algorithm knows the
// runtime). It has no code of its own.
package archtest
