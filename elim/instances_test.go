package elim

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/solver"
)

// optimum is a row of the instances' OPTIMA.tsv.
type optimum struct {
	file   string
	vars   int
	best   float64
	proven bool
	upper  float64
}

func optima(t *testing.T) []optimum {
	dir := instances.Require(t)
	f, err := os.Open(filepath.Join(dir, "OPTIMA.tsv"))
	if err != nil {
		t.Skipf("no OPTIMA.tsv: %v", err)
	}
	defer f.Close()
	var out []optimum
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) < 6 || fs[0] == "file" {
			continue
		}
		o := optimum{file: fs[0], proven: fs[4] == "yes"}
		o.vars, _ = strconv.Atoi(fs[1])
		if o.best, err = strconv.ParseFloat(fs[3], 64); err != nil {
			t.Fatalf("OPTIMA.tsv %s: %v", fs[0], err)
		}
		if o.upper, err = strconv.ParseFloat(fs[5], 64); err != nil {
			t.Fatalf("OPTIMA.tsv %s: %v", fs[0], err)
		}
		out = append(out, o)
	}
	return out
}

func load(t testing.TB, rel string) (*model.Model, model.Evidence) {
	t.Helper()
	path := instances.Path(t, rel)
	m, err := modelfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev model.Evidence
	if _, err := os.Stat(path + ".evid"); err == nil {
		if ev, err = modelfile.LoadEvidenceTee(path+".evid", m, nil); err != nil {
			t.Fatal(err)
		}
	}
	return m, ev
}

// The real instances whose exact elimination fits a test's budget are
// certified at their proven optimum.
func TestInstancesExact(t *testing.T) {
	budget := int64(256 << 20)
	if testing.Short() {
		budget = 16 << 20
	}
	certified := 0
	for _, o := range optima(t) {
		m, ev := load(t, o.file)
		e, err := EstimateOf(context.Background(), m, ev, budget)
		if err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		if !e.Fits || e.Work > 2e9 {
			t.Logf("%s: skipped, %s", o.file, e)
			continue
		}
		opts := DefaultOptions()
		opts.Memory = budget
		start := time.Now()
		res, err := Solve(context.Background(), m, ev, opts, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		if res.Status != solver.Optimal || res.Primal != m.Score(res.Assignment) || res.Dual != res.Primal {
			t.Fatalf("%s: status %s primal %v dual %v", o.file, res.Status, res.Primal, res.Dual)
		}
		if o.proven && math.Abs(res.Primal-o.best) > 1e-6*math.Max(1, math.Abs(o.best)) {
			t.Fatalf("%s: certified %v, proven optimum %v", o.file, res.Primal, o.best)
		}
		if !o.proven && (res.Primal < o.best-1e-6*math.Max(1, math.Abs(o.best)) || res.Primal > o.upper+1e-6) {
			t.Fatalf("%s: certified %v outside [best known %v, upper bound %v]", o.file, res.Primal, o.best, o.upper)
		}
		certified++
		t.Logf("%s: %v in %v (%s)", o.file, res.Primal, time.Since(start).Round(time.Millisecond), e)
	}
	if certified == 0 {
		t.Fatal("no instance certified")
	}
}

// The mini-bucket search certifies linkage_16 (too wide for exact
// elimination: 37 GiB of tables) at its proven optimum.
func TestInstancesSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	const best = -143.662079668 // OPTIMA.tsv, proven
	m, ev := load(t, "pedigree/linkage_16.uai")
	o := DefaultOptions()
	o.Search, o.Memory, o.TimeLimit = true, 256<<20, 60*time.Second
	res, st, err := SolveStats(context.Background(), m, ev, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exact || res.Status != solver.Optimal || res.Primal != m.Score(res.Assignment) || math.Abs(res.Primal-best) > 1e-6*math.Abs(best) || res.Dual < best-1e-9 {
		t.Fatalf("status %s primal %v dual %v, optimum %v (stats %+v)", res.Status, res.Primal, res.Dual, best, st)
	}
	t.Logf("linkage_16: %v in %v, %d nodes, mini-buckets of 2^%v", res.Primal, res.Elapsed, st.Nodes, st.Limit)
}
