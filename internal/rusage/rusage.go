// Package rusage reads this process's resource usage: from getrusage(2),
// its CPU time (every thread, user and system) and its peak resident set;
// from the Go runtime, the bytes a call allocates. The trainers report
// their passes' CPU with it, the runtime its peaks, the benchmarks a CPU
// cost that a shared machine's load does not change, and the memory tests
// what a reader or writer allocates. It imports nothing of ddrun and knows
// nothing of its callers.
package rusage

import (
	"runtime"
	"syscall"
	"time"
)

// CPU returns this process's CPU time so far (user and system, every
// thread), or 0 when unknown.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSSMB returns this process's peak resident set size in MiB (Linux
// reports ru_maxrss in KiB), or -1 when unknown.
func PeakRSSMB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return int64(ru.Maxrss) >> 10
}

// Allocated returns the bytes that f allocates (runtime.MemStats.TotalAlloc:
// every allocation counts, freed or not, so that it bounds the peak live
// heap from above and does not depend on when the collector runs).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
