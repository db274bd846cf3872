package learn

import "syscall"

// processCPU returns this process's CPU seconds so far (user and system,
// every thread), or 0 when unknown: the passes' cost on a machine shared
// with other work, where wall time measures the load.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
