package launch

import (
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model/uai"
)

// onMessage is a log handler that calls fn when the plan logs msg (the
// end of its first pass, "sharding: ranges cut", or of its second,
// "sharding: boundary found").
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}

// TestLocalShardedConnectsOnce: a --local sharded run connects once, and
// its connection starts while the model is read: a job that the class
// cannot refuse (the default) at the first factor (it has started when
// the first pass ends), one that asked for TRW-S once the first pass found
// the class (it has started when the boundary is found); a model that the
// plan's first pass refuses at its unaries (a forbidden state), and a job
// refused once its class is known (TRW-S asked for with checkpoints),
// start nothing, and the error is the refusal.
func TestLocalShardedConnectsOnce(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 8, Width: 9, Labels: 3, Rho: 0.5, Seed: 7})
	dir := t.TempDir()
	good := writeDDX(t, dir, m)
	m.Unary[4] = math.Inf(-1)
	bad := writeDDX(t, t.TempDir(), m)
	badUAI := filepath.Join(t.TempDir(), "bad.uai") // converted: the forbidden state is known once its unary table is folded
	if err := uai.WriteFile(badUAI, m); err != nil {
		t.Fatal(err)
	}
	tr := workers(t, 2)
	for _, c := range []struct {
		name, path string
		job        *engine.Job
		every      int
		want       string // "": runs
		by         string // the plan's log line by which it has connected
		conns      int32  // the connections a refused job made
	}{
		{"runs", good, defaultRunJob(t, 20), 0, "", "sharding: ranges cut", 0},
		{"TRW-S asked for", good, trwsJob(t), 0, "", "sharding: boundary found", 0},
		{"refused by the plan", bad, defaultRunJob(t, 20), 0, "forbidden", "", 0},
		{"refused after the plan", good, trwsJob(t), 5, "no checkpoints", "", 0},
		// Started at the first factor converted, then refused (no
		// fallback to the whole model here): one connection, which the
		// front end closes.
		{"converted, then refused by the plan", badUAI, defaultRunJob(t, 20), 0, "forbidden", "", 1},
	} {
		var calls atomic.Int32
		started := make(chan struct{}, 1)
		var atBoundary atomic.Bool // the connection had started by the log line c.by
		wait := 5 * time.Second    // for the connection to start, once c.by is logged
		if c.want != "" {
			wait = 0
		}
		target := Target{Workers: 2, Job: "early", Sharded: &Sharded{Path: c.path, Local: true},
			Checkpoints: Checkpoints{Every: c.every},
			Logger: slog.New(onMessage{c.by, func() {
				select {
				case <-started:
					atBoundary.Store(true)
				case <-time.After(wait):
				}
			}}),
			Connect: func(context.Context) (*Session, error) {
				calls.Add(1)
				started <- struct{}{}
				return &Session{Transport: tr}, nil
			}}
		o, err := Run(context.Background(), c.job, target, Hooks{})
		switch {
		case c.want == "" && (err != nil || o.Report.Algo != "trws" || o.Report.Iterations < 1 || calls.Load() != 1 || !atBoundary.Load()):
			t.Errorf("%s: %v, algorithm %s, %d iterations, %d connections, started by %q: %v",
				c.name, err, o.Report.Algo, o.Report.Iterations, calls.Load(), c.by, atBoundary.Load())
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || calls.Load() != c.conns):
			t.Errorf("%s: %v, %d connections; want the refusal (%q) and %d", c.name, err, calls.Load(), c.want, c.conns)
		}
	}
}

// trwsJob is a run job with --algo trws given.
func trwsJob(t *testing.T) *engine.Job {
	t.Helper()
	s := engine.Defaults()
	s.Given, s.Distributed = map[string]bool{"algo": true}, true
	s.Algo, s.MaxIter, s.Tol = "trws", 20, 0
	j, err := engine.Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
