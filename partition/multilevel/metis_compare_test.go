package multilevel

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// The comparisons with METIS run only when asked for (DDRUN_METIS=1, or a
// -run pattern naming METIS) and when gpmetis is on PATH (Debian: apt-get
// install metis):
//
//	go test ./partition/ -run METIS -v
//
// They write each graph in the METIS format, run gpmetis with the same k
// and the ufactor of our imbalance tolerance, read its partition back and
// log both cuts, imbalances and times.

// gpmetisPath returns the path of gpmetis, skipping t when the comparison
// was not asked for or gpmetis is missing.
func gpmetisPath(t testing.TB) string {
	t.Helper()
	asked := os.Getenv("DDRUN_METIS") == "1"
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "METIS") {
		asked = true
	}
	if f := flag.Lookup("test.bench"); f != nil && strings.Contains(f.Value.String(), "METIS") {
		asked = true
	}
	if !asked {
		t.Skip("METIS comparison: set DDRUN_METIS=1 or -run METIS")
	}
	p, err := exec.LookPath("gpmetis")
	if err != nil {
		t.Skip("gpmetis not on PATH (apt-get install metis)")
	}
	return p
}

// metisResult is one partitioning run's outcome.
type metisResult struct {
	part    []int32
	cut     int64
	imb     float64
	elapsed time.Duration // gpmetis: its own "Partitioning" time; ours: wall time
	wall    time.Duration // gpmetis: the whole process, I/O included
}

var metisPartTime = regexp.MustCompile(`Partitioning:\s+([0-9.]+) sec`)

// runGpmetis partitions g with gpmetis into k parts at imbalance tol
// (ufactor = 1000*(tol-1)).
func runGpmetis(t testing.TB, bin string, g *Graph, k int, tol float64, seed int) metisResult {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "graph")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMETIS(f, g); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ufactor := int(math.Round(1000 * (tol - 1)))
	t0 := time.Now()
	out, err := exec.Command(bin, fmt.Sprintf("-ufactor=%d", ufactor), fmt.Sprintf("-seed=%d", seed), file, strconv.Itoa(k)).CombinedOutput()
	wall := time.Since(t0)
	if err != nil {
		t.Fatalf("gpmetis: %v\n%s", err, out)
	}
	res := metisResult{wall: wall, elapsed: wall}
	if m := metisPartTime.FindSubmatch(out); m != nil {
		if s, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			res.elapsed = time.Duration(s * float64(time.Second))
		}
	}
	res.part = readPartFile(t, fmt.Sprintf("%s.part.%d", file, k), g.NumVertices(), k)
	res.cut = EdgeCut(g, res.part)
	res.imb = Imbalance(g, res.part, k)
	return res
}

// readPartFile reads a METIS partition file: one part per line.
func readPartFile(t testing.TB, path string, n, k int) []int32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	part := make([]int32, 0, n)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		p, err := strconv.Atoi(line)
		if err != nil || p < 0 || p >= k {
			t.Fatalf("%s:%d: bad part %q", path, len(part)+1, line)
		}
		part = append(part, int32(p))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(part) != n {
		t.Fatalf("%s: %d parts for %d vertices", path, len(part), n)
	}
	return part
}

// runOurs partitions g with Partition and times it.
func runOurs(t testing.TB, g *Graph, k int, opts Options) metisResult {
	t.Helper()
	t0 := time.Now()
	part, err := Partition(g, k, opts)
	el := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	return metisResult{part: part, cut: EdgeCut(g, part), imb: Imbalance(g, part, k), elapsed: el, wall: el}
}

// metisSeeds are the seeds of both partitioners in the comparisons.
var metisSeeds = []int{1, 2, 3}

// compareWithMETIS partitions g with both, once per seed, logs the mean
// cuts, imbalances and times, and returns our mean cut / gpmetis's.
func compareWithMETIS(t *testing.T, bin, name string, g *Graph, k int) float64 {
	t.Helper()
	var oc, mc, oi, mi, ot, mt, mw float64
	for _, seed := range metisSeeds {
		m := runGpmetis(t, bin, g, k, DefaultImbalance, seed)
		o := runOurs(t, g, k, Options{Seed: uint64(seed)})
		oc += float64(o.cut)
		mc += float64(m.cut)
		oi = max(oi, o.imb)
		mi = max(mi, m.imb)
		ot += o.elapsed.Seconds()
		mt += m.elapsed.Seconds()
		mw += m.wall.Seconds()
	}
	ns := float64(len(metisSeeds))
	ratio := oc / math.Max(1, mc)
	t.Logf("%-24s n=%-8d k=%-3d ours cut=%-8.0f imb<=%.3f %7.3fs | gpmetis cut=%-8.0f imb<=%.3f %7.3fs (process %.3fs) | ratio %.3f",
		name, g.NumVertices(), k, oc/ns, oi, ot/ns, mc/ns, mi, mt/ns, mw/ns, ratio)
	return ratio
}

// permuted returns g with its vertices renumbered by a random permutation
// (no locality left in the numbering).
func permuted(g *Graph, seed uint64) *Graph {
	n := g.NumVertices()
	perm := rand.New(rand.NewPCG(seed, seed)).Perm(n)
	edges := make([]Edge, 0, g.NumEdges())
	for v := range n {
		for p := g.Xadj[v]; p < g.Xadj[v+1]; p++ {
			if u := int(g.Adjncy[p]); u > v {
				edges = append(edges, Edge{int32(perm[v]), int32(perm[u]), g.weightAt(int(p))})
			}
		}
	}
	h, err := NewGraph(n, edges, nil)
	if err != nil {
		panic(err)
	}
	return h
}

// TestMETISGrids compares cuts and times on grids, the last one with its
// vertices renumbered at random. Each line is the mean over metisSeeds.
func TestMETISGrids(t *testing.T) {
	bin := gpmetisPath(t)
	for _, sz := range [][2]int{{100, 100}, {300, 300}, {1000, 1000}} {
		g := gridGraph(sz[0], sz[1])
		for _, k := range []int{2, 4, 16, 64} {
			compareWithMETIS(t, bin, fmt.Sprintf("grid %dx%d", sz[0], sz[1]), g, k)
		}
	}
	g := permuted(gridGraph(1000, 1000), 7)
	for _, k := range []int{4, 64} {
		compareWithMETIS(t, bin, "grid 1000x1000 permuted", g, k)
	}
}

// TestMETISInstances compares the placements of the real instances' slaves
// (per-factor and chain plans of the reduced models, as the runtime builds
// them) by ours and by gpmetis on the same slave graph: cut, imbalance,
// time and cross-worker variable replicas.
func TestMETISInstances(t *testing.T) {
	bin := gpmetisPath(t)
	instancesDir := instances.Require(t)
	paths, _ := filepath.Glob(filepath.Join(instancesDir, "*", "*.uai"))
	if len(paths) == 0 {
		t.Skip("no instances in " + instancesDir)
	}
	var ratios []float64
	for _, path := range paths {
		rel, err := filepath.Rel(instancesDir, path)
		if err != nil {
			t.Fatal(err)
		}
		m, ev := oracle.Instance(t, filepath.ToSlash(rel))
		rm, err := model.Reduce(m, ev)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		chains, err := partition.Chains(rm.Model)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			plan partition.Plan
		}{{"factors", partition.PerFactor(rm.Model)}, {"chains", chains}} {
			g, err := SlaveGraph(rm.Model, c.plan)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{2, 4, 8, 16} {
				if w >= g.NumVertices() || g.NumEdges() == 0 {
					continue
				}
				name := fmt.Sprintf("%s/%s", strings.TrimSuffix(filepath.Base(path), ".uai"), c.name)
				mr := runGpmetis(t, bin, g, w, DefaultImbalance, 1)
				or := runOurs(t, g, w, Options{Seed: 1})
				mp := placementOf(rm.Model, c.plan, mr.part, w)
				op := placementOf(rm.Model, c.plan, or.part, w)
				ratio := float64(or.cut) / math.Max(1, float64(mr.cut))
				// Compare cuts at the same balance: skip the runs where
				// either side misses the tolerance (a few vertices too
				// heavy for it, or gpmetis giving up on balance).
				if or.imb <= DefaultImbalance+1e-9 && mr.imb <= DefaultImbalance+1e-9 {
					ratios = append(ratios, ratio)
				}
				t.Logf("%-30s slaves=%-6d W=%-2d ours cut=%-8d imb=%.3f repl=%-6d %.3fs | gpmetis cut=%-8d imb=%.3f repl=%-6d %.3fs | ratio %.3f",
					name, g.NumVertices(), w, or.cut, or.imb, op.Replicas, or.elapsed.Seconds(), mr.cut, mr.imb, mp.Replicas, mr.elapsed.Seconds(), ratio)
			}
		}
	}
	geo := 0.0
	for _, r := range ratios {
		geo += math.Log(r)
	}
	t.Logf("geometric mean of cut ratios (ours/gpmetis) over the %d runs where both meet the tolerance: %.3f (worst %.3f)",
		len(ratios), math.Exp(geo/float64(max(1, len(ratios)))), slices.Max(append(ratios, 0)))
}
