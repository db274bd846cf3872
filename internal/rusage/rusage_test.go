package rusage

import "testing"

// CPU grows with work done, and the peak RSS covers memory touched.
func TestCPUAndPeak(t *testing.T) {
	c0 := CPU()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	sum := 0
	for _, b := range buf {
		sum += int(b)
	}
	if c1 := CPU(); c1 <= c0 {
		t.Errorf("CPU %v after %v and 64 MiB touched (sum %d)", c1, c0, sum)
	}
	if p := PeakRSSMB(); p < 64 {
		t.Errorf("peak RSS %d MiB after touching 64 MiB", p)
	}
}
