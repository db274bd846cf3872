// Package partition decides how a factor graph is split into slaves and
// where the slaves run: which factors each slave owns and in what order it
// sees its variables (fine decompositions give one slave per factor, AD3
// eq. 5; coarse ones group factors into chains or trees so that each slave
// is solved exactly by dynamic programming), and which worker holds each
// slave (Place: a multilevel graph partitioner in the style of METIS,
// balancing estimated solve cost and minimising cross-worker replicas).
//
// It must not know how slaves are solved, how multipliers are updated, or
// how workers talk.
package partition
