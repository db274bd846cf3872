package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Three jobs started together on a pool of six worker processes claim
// disjoint pairs of workers and run side by side: the batch takes well
// below the sum of the jobs' run times, and each job ends exactly like
// its single-process run.
func TestPoolThreeJobsSideBySide(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	startWorkerProcs(t, worker, srv.URL(), "pool", 6, "--quiet")
	// Small models and many iterations: each job's time is mostly the
	// message round trips of its iterations, which jobs can overlap.
	flags := []string{"--json", "--quiet", "--threads", "1", "--tol", "0", "--max-iter", "1500"}
	models := make([]string, 3)
	want := make([]result, 3)
	for i := range models {
		models[i] = genModel(t, coord, "potts", "--height", "12", "--width", "12", "--labels", "4", "--rho", "2", "--seed", fmt.Sprint(i+1), ".uai")
		want[i] = runJSON(t, time.Minute, coord, append(append([]string{"solve", "--algo", "admm"}, flags...), models[i])...)
	}
	got := make([]result, 3) // whole-model jobs (--sharded=false): solve's results to the bit
	start := time.Now()
	var wg sync.WaitGroup
	for i := range models {
		wg.Go(func() {
			got[i] = runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--sharded=false", "--nats", srv.URL(), "--workers", "2", "--job", fmt.Sprintf("pooljob%d", i)}, flags...), models[i])...)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	sum := 0.0
	for i := range models {
		sameResult(t, got[i], want[i])
		sum += got[i].Seconds
	}
	t.Logf("three jobs together: %.2f s wall; their run times sum to %.2f s", wall.Seconds(), sum)
	if wall.Seconds() > 0.8*sum {
		t.Errorf("the batch took %.2f s, not well below the sum of the jobs' %.2f s: they did not run side by side", wall.Seconds(), sum)
	}
}
