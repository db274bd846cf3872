package cluster

import "syscall"

// PeakRSSMB returns this process's peak resident set size in MiB (Linux
// reports ru_maxrss in KiB), or -1 when unknown.
func PeakRSSMB() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return int64(ru.Maxrss) >> 10
}
