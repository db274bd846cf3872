package launch

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/shard"
)

// TestLocalShardedConnectsOnce: a --local sharded run, whose connection
// starts while the plan finds the boundary, connects once and runs; a
// model that the plan's first pass refuses (a forbidden state) starts
// nothing, and its error is the plan's.
func TestLocalShardedConnectsOnce(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 8, Width: 9, Labels: 3, Rho: 0.5, Seed: 7})
	dir := t.TempDir()
	good := writeDDX(t, dir, m)
	m.Unary[4] = math.Inf(-1)
	bad := writeDDX(t, t.TempDir(), m)
	tr := workers(t, 2)
	j := defaultRunJob(t, 20)
	for _, path := range []string{good, bad} {
		var calls atomic.Int32
		target := Target{Workers: 2, Job: "early", Sharded: &Sharded{Path: path, Local: true},
			Connect: func(context.Context) (*Session, error) {
				calls.Add(1)
				return &Session{Transport: tr}, nil
			}}
		o, err := Run(context.Background(), j, target, Hooks{})
		var ue *shard.UnshardableError
		switch {
		case path == good && (err != nil || o.Report.Algo != "trws" || o.Report.Iterations < 1 || calls.Load() != 1):
			t.Errorf("%s: %v, algorithm %s, %d iterations, %d connections", path, err, o.Report.Algo, o.Report.Iterations, calls.Load())
		case path == bad && (!errors.As(err, &ue) || calls.Load() != 0):
			t.Errorf("%s: %v, %d connections; want the plan's refusal and none", path, err, calls.Load())
		}
	}
}
