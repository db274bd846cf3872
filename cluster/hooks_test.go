package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
)

// hookLog records what the hooks of a run and of its workers were told.
type hookLog struct {
	mu          sync.Mutex
	steps       map[string]int // coordinator's Step, by worker
	workers     []int          // Workers, in order
	checkpoints int
	failed      int
	workerSteps int              // the workers' OnStep
	parts       map[string][]int // the workers' OnParts, by worker
}

func (h *hookLog) hooks() Hooks {
	return Hooks{
		Step: func(w string, d time.Duration) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if d <= 0 {
				panic("non-positive step time")
			}
			h.steps[w]++
		},
		Workers: func(n int) { h.mu.Lock(); h.workers = append(h.workers, n); h.mu.Unlock() },
		Checkpoint: func(d time.Duration, err error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if err != nil {
				h.failed++
			}
			h.checkpoints++
		},
	}
}

// The hooks of a run see every worker's every step, the workers claimed
// and given back, and every checkpoint, in memory or written to a store;
// the workers' hooks see their steps and the part they hold.
func TestHooksSeeTheRun(t *testing.T) {
	cases := []struct {
		name string
		dir  bool
	}{{"in memory", false}, {"in a directory", true}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			workers := NewTestCluster(t, TestClusterOptions{})
			h := &hookLog{steps: map[string]int{}, parts: map[string][]int{}}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for i := range 3 {
				name := fmt.Sprintf("h%d", i)
				workers.StartWith(WorkerOptions{Name: name,
					OnStep:  func(time.Duration) { h.mu.Lock(); h.workerSteps++; h.mu.Unlock() },
					OnParts: func(n int) { h.mu.Lock(); h.parts[name] = append(h.parts[name], n); h.mu.Unlock() }})
			}
			j, _ := testJob(t, workers.Transport("coordinator"), "hooks")
			j.Run.Hooks = h.hooks()
			if c.dir {
				d, err := checkpoint.OpenDir(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				j.Dir = d
			}
			out, err := RunJob(ctx, j)
			workers.StopAll() // the workers' hooks have all been called
			if err != nil {
				t.Fatal(err)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			iters := out.Result.Iterations
			if iters < 25 {
				t.Fatalf("%d iterations: too few for a checkpoint", iters)
			}
			for i := range 3 {
				name := fmt.Sprintf("h%d", i)
				if h.steps[name] != iters {
					t.Errorf("Step saw %d steps of %s, want %d", h.steps[name], name, iters)
				}
				if p := h.parts[name]; len(p) != 2 || p[0] != 1 || p[1] != 0 {
					t.Errorf("OnParts of %s: %v, want [1 0]", name, p)
				}
			}
			if h.workerSteps != 3*iters {
				t.Errorf("the workers' OnStep: %d, want %d", h.workerSteps, 3*iters)
			}
			if len(h.workers) != 2 || h.workers[0] != 3 || h.workers[1] != 0 {
				t.Errorf("Workers: %v, want [3 0]", h.workers)
			}
			if want := iters / 25; h.checkpoints != want || h.failed != 0 {
				t.Errorf("Checkpoint: %d (%d failed), want %d", h.checkpoints, h.failed, want)
			}
		})
	}
}
