package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/uai"
)

// shardedJSON is the sharded part of the JSON result.
type shardedJSON struct {
	Sharded *struct {
		Boundary         int     `json:"boundary_variables"`
		CoordinatorRSSMB int64   `json:"coordinator_peak_rss_mb"`
		WorkerRSSMB      []int64 `json:"worker_peak_rss_mb"`
	} `json:"sharded"`
}

// convertDDX converts a model file to an indexed one beside it.
func convertDDX(t *testing.T, coord, in string) string {
	t.Helper()
	out := strings.TrimSuffix(strings.TrimSuffix(in, ".gz"), filepath.Ext(strings.TrimSuffix(in, ".gz"))) + ".ddx"
	if b, err := exec.Command(coord, "convert", in, out).CombinedOutput(); err != nil {
		t.Fatalf("convert: %v\n%s", err, b)
	}
	return out
}

// run --sharded, with W = 1..4 worker processes reading their parts from
// the file, takes the iterations of solve and reaches its dual (to
// rounding); its primal is the exact score of the assignment it writes to
// --out; with one worker the whole result is solve's.
func TestShardedRunMatchesSolve(t *testing.T) {
	coord, _ := binaries(t)
	cases := []struct {
		name  string
		model string
		flags []string
	}{
		{"potts", genModel(t, coord, "potts", "--height", "15", "--width", "15", "--labels", "4", "--rho", "1", ".ddx"), nil},
		{"ising", convertDDX(t, coord, genModel(t, coord, "ising", "--height", "12", "--width", "12", "--rho", "0.5", ".uai")), nil},
		{"potts-gz-subgradient", convertDDX(t, coord, genModel(t, coord, "potts", "--height", "10", "--width", "14", "--labels", "3", "--rho", "0.5", ".uai.gz")), []string{"--algo", "subgradient", "--step", "1/t"}},
	}
	for _, c := range cases {
		m, err := modelfile.Load(c.model)
		if err != nil {
			t.Fatal(err)
		}
		flags := append([]string{"--json", "--quiet", "--max-iter", "150"}, c.flags...)
		want := runJSON(t, time.Minute, coord, append(append([]string{"solve"}, flags...), c.model)...)
		for w := 1; w <= 4; w++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, w), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "x.mpe")
				got := runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--sharded", "--local", "--workers", fmt.Sprint(w), "--out", out}, flags...), c.model)...)
				if got.Primal == nil {
					t.Fatalf("no primal (%s after %d)", got.Status, got.Iterations)
				}
				f, err := os.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				x, err := uai.ReadMPE(f, out)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if sc := m.Score(x); math.Abs(sc-*got.Primal) > 1e-9*math.Max(1, math.Abs(sc)) {
					t.Errorf("primal %v, the assignment in --out scores %v", *got.Primal, sc)
				}
				if got.Status != "optimal" && want.Status != "optimal" &&
					(got.Iterations != want.Iterations || math.Abs(*got.Dual-*want.Dual) > 1e-9*math.Max(1, math.Abs(*want.Dual))) {
					t.Errorf("%s after %d, dual %v; solve: %s after %d, dual %v", got.Status, got.Iterations, *got.Dual, want.Status, want.Iterations, *want.Dual)
				}
				if w == 1 {
					sameResult(t, got, want)
				}
			})
		}
	}
}

// The coordinator of a sharded run holds the boundary, not the model: two
// grids with the same boundary and interiors 100 times apart give it the
// same peak memory (a coordinator holding the model would need about 1.5
// KB per variable more: 450 MB for the larger grid).
func TestShardedCoordinatorMemoryFlat(t *testing.T) {
	coord, _ := binaries(t)
	peak := map[int]int64{}
	for _, h := range []int{30, 3000} {
		model := genModel(t, coord, "potts", "--height", fmt.Sprint(h), "--width", "100", "--labels", "4", "--rho", "0.5", ".ddx")
		var r shardedJSON
		runJSONInto(t, 3*time.Minute, coord, &r, "run", "--sharded", "--local", "--workers", "2", "--json", "--quiet", "--max-iter", "5", model)
		if r.Sharded == nil || r.Sharded.Boundary != 100 {
			t.Fatalf("height %d: sharded result %+v, want a boundary of 100 variables", h, r.Sharded)
		}
		peak[h] = r.Sharded.CoordinatorRSSMB
		t.Logf("height %d (%d variables): coordinator peak %d MB, workers %v MB", h, 100*h, r.Sharded.CoordinatorRSSMB, r.Sharded.WorkerRSSMB)
	}
	if small, big := peak[30], peak[3000]; float64(big) > 1.1*float64(small)+4 {
		t.Errorf("coordinator peak %d MB for 300,000 variables, %d MB for 3,000: it grows with the interior", big, small)
	}
}
