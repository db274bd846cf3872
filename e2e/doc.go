// Package e2e holds end-to-end tests: they build the coordinator and worker
// binaries, start real processes on loopback with random ports, and compare
// distributed runs with single-process ones. Every process a test starts is
// stopped and reaped before the test ends.
package e2e
