package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/trace"
)

// fakeRunner reports iterations 1..n every iteration, then returns res
// (or err).
type fakeRunner struct {
	n   int
	res solver.Result
	err error
}

func (f fakeRunner) Check(context.Context, string, map[string]string) (Plan, error) {
	return Plan{MaxIter: f.n}, nil
}

func (f fakeRunner) Run(_ context.Context, _, _ string, _ map[string]string, progress func(solver.Progress)) (solver.Result, json.RawMessage, error) {
	for i := 1; i <= f.n; i++ {
		progress(solver.Progress{Iteration: i, Dual: 10 - float64(i), Primal: 1, Gap: 9 - float64(i), Eta: 0.5, Elapsed: time.Duration(i) * time.Millisecond})
	}
	return f.res, json.RawMessage(`{}`), f.err
}

// runJob runs one job on r and returns its final status and trace.
func runJob(t *testing.T, r Runner) (Status, []trace.Row) {
	t.Helper()
	s, err := New(Options{Dir: t.TempDir(), Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Submit(context.Background(), strings.NewReader("MARKOV\n1\n2\n0\n"), "uai", nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !st.State.final(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job still %s", st.State)
		}
		if st, err = s.Get(st.ID); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Trace(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := trace.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return st, rows
}

// A job's trace has one row per report and ends on the result exactly,
// as --trace's does (trace.Recorder): the result of the last reported
// iteration, with a better primal from the final polish, is that
// iteration's row, not a row after it.
func TestJobTraceEndsOnTheResult(t *testing.T) {
	res := solver.Result{Status: solver.Optimal, Iterations: 5, Dual: 5, Primal: 4.5, Gap: 0.5, Elapsed: 7 * time.Millisecond}
	st, rows := runJob(t, fakeRunner{n: 5, res: res})
	if st.State != Done {
		t.Fatalf("job %s (%s), want done", st.State, st.Error)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (one per iteration, the last the result)", len(rows))
	}
	want := trace.Row{Iteration: 5, Seconds: res.Elapsed.Seconds(), Dual: 5, Primal: 4.5, Gap: 0.5, Eta: 0.5}
	if last := rows[4]; last != want {
		t.Errorf("last row %+v, want %+v", last, want)
	}
}

// A job that fails keeps its last report in the trace.
func TestFailedJobTraceKeepsTheLastReport(t *testing.T) {
	st, rows := runJob(t, fakeRunner{n: 3, err: errors.New("boom")})
	if st.State != Failed {
		t.Fatalf("job %s, want failed", st.State)
	}
	if len(rows) != 3 || rows[2].Iteration != 3 || rows[2].Dual != 7 {
		t.Fatalf("rows %+v, want iterations 1 to 3", rows)
	}
}
