package e2e

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/wcsp"
)

// toulbar2Files are the table-only .wcsp and .cfn files of toulbar2's
// validation/default (no global cost function, no interval variable), and
// web/EXAMPLES/example.wcsp.xz for an xz-compressed one, that solve
// certifies within 30 s; the files themselves are never part of this
// repository.
var toulbar2Files = []string{"4queens-bis.wcsp", "4queens.wcsp", "cap131.wcsp", "example.wcsp",
	"oconnell.wcsp", "oconnell_bayesnet.wcsp", "warehouse.wcsp", "zebra.wcsp",
	"1aho.cfn.gz", "alarm.cfn.gz", "maximization.cfn", "example.wcsp.xz"}

// toulbar2Offsets are what toulbar2 adds to a file's objective when it
// prints it: readNaryCostFunction (src/utils/tb2reader.cpp) moves the least
// cost of a full table of arity 4 or more into its negative-cost offset
// without subtracting it from the table, so that least cost is counted
// twice. alarm.cfn.gz has three such tables (P_ZPress, P_Catechol,
// P_ZVentLung, least costs 0.030459, 0.010050, 0.030459). The objective
// of toulbar2's own solution, summed from the file, is the printed optimum
// less the offset; the test checks that too.
var toulbar2Offsets = map[string]float64{"alarm.cfn.gz": 0.070968}

var optimumLine = regexp.MustCompile(`(?m)^Optimum: (-?[0-9.]+)`)

// coordinator solve ends optimal on toulbar2's own WCSP and CFN files with
// the cost toulbar2 prints as its optimum (less its offset, above), which
// is also the objective of toulbar2's solution read by ddrun. It needs toulbar2 on PATH and the
// files (git show HEAD:validation/default/FILE from toulbar2's repository)
// in the folder DDRUN_TOULBAR2_FILES; it skips otherwise.
func TestToulbar2WCSPOptima(t *testing.T) {
	tb2, err := exec.LookPath("toulbar2")
	if err != nil {
		t.Skip("toulbar2 is not on PATH")
	}
	dir := os.Getenv("DDRUN_TOULBAR2_FILES")
	if dir == "" {
		t.Skip("DDRUN_TOULBAR2_FILES is not set")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("DDRUN_TOULBAR2_FILES: %v", err)
	}
	coord, _ := binaries(t)
	for _, name := range toulbar2Files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sol := filepath.Join(t.TempDir(), "sol")
			out, err := exec.CommandContext(ctx, tb2, path, "-w="+sol).CombinedOutput()
			if err != nil {
				t.Fatalf("toulbar2 %s: %v\n%s", name, err, out)
			}
			m := optimumLine.FindSubmatch(out)
			if m == nil {
				t.Fatalf("toulbar2 %s printed no optimum:\n%s", name, out)
			}
			printed, _ := strconv.ParseFloat(string(m[1]), 64)
			want := printed - toulbar2Offsets[name]
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
			r := runJSON(t, time.Minute, coord, "solve", "--time-limit", "30s", "--json", "--quiet", path)
			if r.Status != "optimal" || r.Primal == nil || r.Cost == nil || !near(*r.Cost, want) {
				t.Fatalf("solve %s: %s, primal %v, cost %v; toulbar2's optimum %v", name, r.Status, deref(r.Primal), deref(r.Cost), want)
			}
			if modelfile.FormatOf(path) == modelfile.WCSP && wcsp.Cost(*r.Primal) != want {
				t.Fatalf("solve %s: primal %v is not minus the cost %v", name, *r.Primal, want)
			}
			// toulbar2's solution, scored by ddrun's reading of the file.
			var cost func(float64) float64
			model, err := modelfile.LoadWith(ctx, path, modelfile.Options{Cost: &cost})
			if err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(sol)
			if err != nil {
				t.Fatal(err)
			}
			var x []int
			for _, f := range strings.Fields(string(text)) {
				v, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("toulbar2's solution %q: %v", text, err)
				}
				x = append(x, v)
			}
			if len(x) != len(model.Cards) || !near(cost(model.Score(x)), want) {
				t.Fatalf("toulbar2's solution %v: ddrun's objective %v, want %v", x, cost(model.Score(x)), want)
			}
			t.Logf("%s: optimal, cost %v = toulbar2's optimum %v less its offset %v", name, *r.Cost, printed, toulbar2Offsets[name])
		})
	}
}

// toulbar2's formats through the job service: a small .wcsp (integer
// costs) and a model converted to .cfn (gzip too), submitted with
// ?format=, run to solve's result on the same file, cost included (issue
// 29: every model a user has is readable, the service's uploads too).
func TestServeToulbar2Formats(t *testing.T) {
	coord, _ := binaries(t)
	uai := genModel(t, coord, "potts", "--height", "5", "--width", "5", "--labels", "3", "--rho", "1", ".uai")
	dir := t.TempDir()
	s := startServe(t, filepath.Join(dir, "data"), "--quiet")
	defer s.stop(t)
	// x0, x1 in {0,1}: cost 3 at (0,1), 2 at (1,0); x1 = 0 costs 1; x2 = 1
	// costs 4, else 1. The optimum: x0 = x1 = 1, x2 = 0, cost 1.
	tiny := "tiny 3 2 3 10\n2 2 2\n2 0 1 0 2\n0 1 3\n1 0 2\n1 1 0 2\n0 1\n1 0\n1 2 1 1\n1 4\n"
	for _, format := range []string{"wcsp", "cfn", "cfn.gz"} {
		model := filepath.Join(dir, "m."+format)
		if format == "wcsp" {
			if err := os.WriteFile(model, []byte(tiny), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			runOK(t, coord, "convert", uai, model)
		}
		want := runJSON(t, time.Minute, coord, "solve", "--algo", "admm", "--max-iter", "100", "--json", "--quiet", model)
		if want.Cost == nil || format == "wcsp" && *want.Cost != 1 {
			t.Fatalf("%s: solve --json's cost %v", format, want.Cost)
		}
		id := s.submit(t, model, "format="+format+"&algo=admm&max_iter=100")
		got := s.checkJob(t, id, want)
		if got.Cost == nil || *got.Cost != *want.Cost {
			t.Errorf("%s: the service's cost %v, solve's %v", format, got.Cost, *want.Cost)
		}
	}
}
