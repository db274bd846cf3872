package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
