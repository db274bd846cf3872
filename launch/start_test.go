package launch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/solver"
)

// A run on workers reports its times from the command's start
// (Target.Start), as solve does: every progress report and the result,
// with the whole model on the coordinator (dual decomposition, its anytime
// phases, the exact search) and sharded (distributed TRW-S, DD-ADMM).
func TestRunTimesCountFromStart(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 4, Width: 5, Labels: 3, Rho: 0.5, Seed: 3})
	path := writeDDX(t, t.TempDir(), m)
	tr := workers(t, 2)
	for i, c := range []struct {
		name    string
		job     *engine.Job
		sharded bool
	}{
		{"dual decomposition", distributedJob(t, "algo", "admm", "max-iter", "20", "threads", "1"), false},
		{"anytime", distributedJob(t, "algo", "admm", "max-iter", "20", "threads", "1", "anytime", "true", "time-limit", "1m"), false},
		{"exact", exactJob(t), false},
		{"sharded TRW-S", defaultRunJob(t, 20), true},
		{"sharded DD-ADMM", admmJob(t), true},
	} {
		var sh *Sharded
		if c.sharded {
			sh = &Sharded{Path: path}
		} else if err := c.job.Bind(m, nil); err != nil {
			t.Fatal(err)
		}
		var first, last time.Duration = -1, -1
		h := Hooks{Hooks: engine.Hooks{Progress: func(p solver.Progress) {
			if first < 0 {
				first = p.Elapsed
			}
			last = p.Elapsed
		}}}
		target := Target{Workers: 2, Transport: tr, Job: fmt.Sprintf("start%d", i), Wait: 10 * time.Second, Start: time.Now().Add(-time.Hour), Sharded: sh}
		o, err := Run(context.Background(), c.job, target, h)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.Result.Elapsed < time.Hour || first < time.Hour || last < time.Hour {
			t.Errorf("%s: result %v, progress from %v to %v: want all an hour or more", c.name, o.Result.Elapsed, first, last)
		}
	}
}
