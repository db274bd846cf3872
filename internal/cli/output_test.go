package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/solver"
)

// TestRecordedLine: a result recorded by a dead leader prints its status,
// its bounds ("none" for a missing one) and says where it came from.
func TestRecordedLine(t *testing.T) {
	var buf bytes.Buffer
	c := New(&buf)
	c.Start(Options{Quiet: true})
	dual := 12.5
	c.Recorded(engine.Result{Status: solver.Converged, Iterations: 7, Dual: &dual})
	want := "status=" + string(solver.Converged) + " iterations=7 dual=12.5 primal=none (recorded by the previous leader)"
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
