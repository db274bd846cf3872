package plot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/trace"
)

// writeTrace writes rows as a --trace file in dir.
func writeTrace(t *testing.T, dir, name string, rows []trace.Row) string {
	t.Helper()
	var b bytes.Buffer
	w, err := trace.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		w.Write(r)
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A trace reads back with its rows; one without a finite dual, or
// without rows, is refused with its path named; the picture of the rows
// is an SVG whose legend names the trace's dual and primal.
func TestReadFileAndPicture(t *testing.T) {
	dir := t.TempDir()
	ninf := math.Inf(-1)
	good := writeTrace(t, dir, "run1.csv", []trace.Row{
		{Iteration: 1, Seconds: 0.1, Dual: 10, Primal: ninf, Gap: math.Inf(1)},
		{Iteration: 2, Seconds: 0.2, Dual: 8, Primal: 5, Gap: 3},
		{Iteration: 3, Seconds: 0.3, Dual: 7, Primal: 6, Gap: 1},
	})
	infeasible := writeTrace(t, dir, "inf.csv", []trace.Row{{Iteration: 1, Seconds: 0.1, Dual: ninf, Primal: ninf}})
	empty := writeTrace(t, dir, "empty.csv", nil)

	rows, err := ReadFile(good)
	if err != nil || len(rows) != 3 || rows[2].Primal != 6 {
		t.Fatalf("ReadFile(%s) = %v, %v; want the 3 rows", good, rows, err)
	}
	for path, want := range map[string]string{infeasible: "no finite dual", empty: "no rows", filepath.Join(dir, "missing.csv"): "missing.csv"} {
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile(%s) = %v, want an error with %q", path, err, want)
		}
	}
	if got := Title([]string{good}); got != "ddrun convergence: run1" {
		t.Errorf("Title = %q", got)
	}
	if got := Title([]string{good, good}); got != "ddrun convergence" {
		t.Errorf("Title of two = %q", got)
	}
	for _, full := range []bool{false, true} {
		wt, err := Picture("t", []string{good}, [][]trace.Row{rows}, full, "svg")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := wt.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		svg := b.String()
		if !strings.Contains(svg, "<svg") || !strings.Contains(svg, "run1 dual") || !strings.Contains(svg, "run1 primal") {
			t.Errorf("full=%v: not an SVG with the legend run1 dual, run1 primal: %.200s", full, svg)
		}
	}
	if _, err := Picture("t", []string{good}, [][]trace.Row{rows}, false, "gif"); err == nil {
		t.Error("Picture in gif: no error")
	}
}

// The seconds axis is labelled at 4 to 10 distinct round values within the
// range, each label the value it marks, for short and long runs.
func TestTimeTicks(t *testing.T) {
	for _, hi := range []float64{0.003, 0.05, 0.3, 1, 1.7, 7.977, 30, 95, 3600} {
		var labels []string
		seen := map[string]bool{}
		for _, tk := range (roundTicks{}).Ticks(0, hi) {
			if tk.Value < 0 || tk.Value > hi*(1+1e-9) {
				t.Fatalf("[0, %v]: tick %v outside", hi, tk.Value)
			}
			if tk.Label == "" {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9*hi || seen[tk.Label] {
				t.Fatalf("[0, %v]: label %q at %v", hi, tk.Label, tk.Value)
			}
			seen[tk.Label] = true
			labels = append(labels, tk.Label)
		}
		if len(labels) < 4 || len(labels) > 10 {
			t.Fatalf("[0, %v]: labels %v", hi, labels)
		}
	}
}
