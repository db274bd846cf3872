package consensus

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/partition"
)

// stressBudget is the time each stress test spends: a few seconds in a
// normal run, a minute with DDRUN_STRESS=1.
func stressBudget() time.Duration {
	if os.Getenv("DDRUN_STRESS") != "" {
		return time.Minute
	}
	return 2 * time.Second
}

// stressYield delays its caller at random: mostly not at all, often by a
// Gosched, now and then by a short sleep. Safe for concurrent use.
func stressYield() {
	switch r := rand.IntN(32); {
	case r == 0:
		time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
	case r < 8:
		runtime.Gosched()
	}
}

// stressCase is one setting of the stress tests: GOMAXPROCS and the
// pool's threads, below, equal to and above it.
type stressCase struct{ procs, threads int }

func stressCases() []stressCase {
	var cs []stressCase
	for procs := 1; procs <= 4; procs++ {
		for _, threads := range []int{2, 3, 5} {
			cs = append(cs, stressCase{procs, threads})
		}
	}
	return cs
}

// underWatchdog runs f with GOMAXPROCS procs (restored after) and fails the
// test with every goroutine's stack when f does not return within limit: a
// lost wake-up hangs the pool rather than failing it.
func underWatchdog(t *testing.T, procs int, limit time.Duration, f func() error) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limit):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("no answer within %v: the pool hangs\n%s", limit, buf)
	}
}

// The pool's handshake (spin, park, notify) survives any scheduling: many
// short phases, random delays inside the bodies and between the steps of
// the handshake, every chunk run exactly once per phase and none after
// run returns (the race detector checks the latter too).
func TestPoolStress(t *testing.T) {
	cases := stressCases()
	each := stressBudget() / time.Duration(len(cases))
	for _, c := range cases {
		underWatchdog(t, c.procs, each+20*time.Second, func() error {
			p := newPool(c.threads)
			defer p.close()
			p.yield = stressYield
			const maxChunks = 24
			count := make([]int32, maxChunks)
			body := func(_, chunk int) {
				count[chunk]++
				stressYield()
			}
			phases := 0
			// At least 100 phases, however slow a loaded machine makes
			// them (the watchdog catches a pool that hangs).
			for end := time.Now().Add(each); phases < 100 || time.Now().Before(end); phases++ {
				chunks := rand.IntN(maxChunks + 1)
				clear(count)
				p.run(chunks, body)
				for k, n := range count {
					if want := int32(min(1, max(0, chunks-k))); n != want {
						return fmt.Errorf("GOMAXPROCS %d, %d threads, phase %d of %d chunks: chunk %d ran %d times",
							c.procs, c.threads, phases, chunks, k, n)
					}
				}
			}
			return nil
		})
	}
}

// The worker's loop (slaves, variables, multipliers on its pool) gives,
// iteration by iteration, the same values as one thread under the same
// random scheduling.
func TestWorkerStress(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 3, Rho: 1, Seed: 9})
	opts := DefaultOptions()
	const iters = 40
	trace := func(threads int, yield func()) ([]iterResult, error) {
		o := opts
		o.Threads = threads
		s, entries, done, err := newLocal(m, partition.PerFactor(m), o, 1)
		if err != nil {
			return nil, err
		}
		defer done()
		s.pool.yield = yield
		ctx := context.Background()
		var rs []iterResult
		for range iters {
			r, err := s.iterate(ctx, false, false)
			if err != nil {
				return nil, err
			}
			s.normalise(&r, entries)
			s.adaptEta(r.primalRes, r.dualRes)
			rs = append(rs, r)
		}
		return rs, nil
	}
	want, err := trace(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := stressCases()
	each := stressBudget() / time.Duration(len(cases))
	for _, c := range cases {
		underWatchdog(t, c.procs, each+20*time.Second, func() error {
			for end, runs := time.Now().Add(each), 0; runs < 1 || time.Now().Before(end); runs++ {
				got, err := trace(c.threads, stressYield)
				if err != nil {
					return err
				}
				for i := range want {
					if got[i] != want[i] {
						return fmt.Errorf("GOMAXPROCS %d, %d threads, run %d, iteration %d: %+v, one thread: %+v",
							c.procs, c.threads, runs, i+1, got[i], want[i])
					}
				}
			}
			return nil
		})
	}
}
