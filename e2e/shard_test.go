package e2e

import (
	"encoding/json"
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

	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/trace"
)

// convertDDX converts a model file to an indexed one beside it.
func convertDDX(t *testing.T, coord, in string) string {
	t.Helper()
	out := strings.TrimSuffix(strings.TrimSuffix(in, ".gz"), filepath.Ext(strings.TrimSuffix(in, ".gz"))) + ".ddx"
	runOK(t, coord, "convert", in, out)
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
		// DD-ADMM given: with no algorithm, run chooses distributed
		// TRW-S on these pairwise grids (launch/dtrws.go).
		{"potts", genModel(t, coord, "potts", "--height", "15", "--width", "15", "--labels", "4", "--rho", "1", ".ddx"), []string{"--algo", "admm"}},
		{"ising", convertDDX(t, coord, genModel(t, coord, "ising", "--height", "12", "--width", "12", "--rho", "0.5", ".uai")), []string{"--algo", "admm"}},
		{"potts-gz-subgradient", convertDDX(t, coord, genModel(t, coord, "potts", "--height", "10", "--width", "14", "--labels", "3", "--rho", "0.5", ".uai.gz")), []string{"--algo", "subgradient", "--step", "1/t"}},
	}
	for _, c := range cases {
		m := loadModel(t, c.model)
		flags := append([]string{"--json", "--quiet", "--max-iter", "150"}, c.flags...)
		want := runJSON(t, time.Minute, coord, append(append([]string{"solve", "--algo", "admm"}, flags...), c.model)...)
		for w := 1; w <= 4; w++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, w), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "x.mpe")
				got := runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--sharded", "--local", "--workers", fmt.Sprint(w), "--out", out}, flags...), c.model)...)
				if got.Primal == nil {
					t.Fatalf("no primal (%s after %d)", got.Status, got.Iterations)
				}
				checkOut(t, "", m, out, got.Primal)
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
		var r result
		runJSONInto(t, 3*time.Minute, coord, &r, "run", "--sharded", "--local", "--workers", "2", "--algo", "admm", "--json", "--quiet", "--max-iter", "5", model)
		if r.Sharded == nil || r.Sharded.Boundary != 100 {
			t.Fatalf("height %d: sharded result %+v, want a boundary of 100 variables", h, r.Sharded)
		}
		peak[h] = r.Sharded.CoordinatorRSSMB
		if len(r.Sharded.WorkerRSSMB) != 2 || slices.Min(r.Sharded.WorkerRSSMB) <= 0 {
			t.Errorf("height %d: worker peaks %v MB, want one positive peak per worker", h, r.Sharded.WorkerRSSMB)
		}
		t.Logf("height %d (%d variables): coordinator peak %d MB, workers %v MB", h, 100*h, r.Sharded.CoordinatorRSSMB, r.Sharded.WorkerRSSMB)
	}
	if small, big := peak[30], peak[3000]; float64(big) > 1.1*float64(small)+4 {
		t.Errorf("coordinator peak %d MB for 300,000 variables, %d MB for 3,000: it grows with the interior", big, small)
	}
}

// kill -9 of a sharded run's worker mid-run: the coordinator notices
// within --lost-after, a spare and the worker left go back to the latest
// checkpoint (their state files), and the run ends with a valid bound and
// a primal that is the exact score of the assignment in --out.
func TestKillShardedWorkerMidRun(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	model := genModel(t, coord, "potts", "--height", "150", "--width", "150", "--labels", "4", "--rho", "0.5", ".ddx")
	m := loadModel(t, model)
	out := filepath.Join(t.TempDir(), "x.mpe")
	states := workerStateDir(t) // where the workers write their states
	ws := startWorkerProcs(t, worker, srv.URL(), "sk", 2, "--quiet")
	run := startProc(t, "coordinator", coord, "run", "--sharded", "--nats", srv.URL(), "--workers", "2", "--job", "shkill", "--lost-after", "1s",
		"--checkpoint-every", "20", "--state-dir", states, "--json", "--threads", "1", "--tol", "0", "--max-iter", "400", "--out", out, model)
	// Kill a worker once a checkpoint's state files are there.
	waitStateFiles(t, states, "shkill", run)
	startWorkerProcs(t, worker, srv.URL(), "spare", 1, "--quiet")
	time.Sleep(700 * time.Millisecond) // let the spare announce itself
	ws[0].kill()
	if err := run.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("run after kill -9: %v\n%s", err, run.stderr())
	}
	if !strings.Contains(run.stderr(), "worker lost") {
		t.Errorf("no failover logged:\n%s", run.stderr())
	}
	got := run.result(t)
	if got.Sharded == nil || got.Sharded.Failovers != 1 || got.Sharded.Restored != 1 {
		t.Fatalf("sharded result %s: want 1 failover restored from a checkpoint", run.stdout.String())
	}
	if got.Primal == nil || got.Dual == nil || *got.Primal > *got.Dual+1e-9*math.Abs(*got.Dual) {
		t.Fatalf("after kill -9: %s dual %v primal %v", got.Status, deref(got.Dual), deref(got.Primal))
	}
	checkOut(t, "", m, out, got.Primal)
}

// waitStateFiles waits until the run's coordinator holds a checkpoint of
// job's first epoch whose state files both workers wrote. A worker writes
// its file before it answers the order, and the coordinator records the
// checkpoint on the answers, so files alone do not say it was recorded;
// but a worker answers in order, so once both workers wrote the files of
// a second checkpoint, the coordinator had the first one's answers before
// it ordered the second.
func waitStateFiles(t *testing.T, states, job string, run *proc) {
	t.Helper()
	deadline := time.After(time.Minute)
	both := map[int]bool{} // the checkpoints' iterations whose files both parts wrote
	for {
		names, _ := filepath.Glob(filepath.Join(states, job+"-e1-p*-i*.ddstate"))
		parts := map[int]map[int]bool{} // iteration -> parts
		for _, n := range names {
			var p, i int
			if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(n), job+"-e1-"), "p%d-i%d.ddstate", &p, &i); err == nil {
				if parts[i] == nil {
					parts[i] = map[int]bool{}
				}
				parts[i][p] = true
			}
		}
		for i, ps := range parts {
			if len(ps) >= 2 {
				both[i] = true
			}
		}
		if len(both) >= 2 {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("no two checkpoints' state files within a minute\n%s", run.stderr())
		case <-run.done:
			t.Fatalf("the run ended before its second checkpoint\n%s", run.stderr())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The coordinator's checkpoint of a sharded run holds the boundary and the
// workers' references to their state files, not the parts: two grids with
// the same boundary and interiors 10 times apart give checkpoints of the
// same size, while the workers' state files grow with the interior.
func TestShardedCheckpointFlat(t *testing.T) {
	coord, _ := binaries(t)
	bytesLine := regexp.MustCompile(`msg=checkpoint .*?bytes=(\d+)`)
	ckpt, states := map[int]int{}, map[int]int64{}
	for _, h := range []int{30, 300} {
		model := genModel(t, coord, "potts", "--height", fmt.Sprint(h), "--width", "100", "--labels", "4", "--rho", "0.5", ".ddx")
		dir, sdir := t.TempDir(), t.TempDir()
		b, err := exec.Command(coord, "run", "--sharded", "--local", "--workers", "2", "--job", fmt.Sprintf("flat%d", h), "--max-iter", "5",
			"--checkpoint-every", "5", "--checkpoint-dir", dir, "--state-dir", sdir, model).CombinedOutput()
		if err != nil {
			t.Fatalf("height %d: %v\n%s", h, err, b)
		}
		mm := bytesLine.FindSubmatch(b)
		if mm == nil {
			t.Fatalf("height %d: no checkpoint logged\n%s", h, b)
		}
		ckpt[h], _ = strconv.Atoi(string(mm[1]))
		names, _ := filepath.Glob(filepath.Join(sdir, "*.ddstate"))
		for _, n := range names {
			if fi, err := os.Stat(n); err == nil {
				states[h] += fi.Size()
			}
		}
		t.Logf("height %d: coordinator checkpoint %d bytes, workers' state files %d bytes", h, ckpt[h], states[h])
	}
	if small, big := ckpt[30], ckpt[300]; big > small+64 {
		t.Errorf("coordinator checkpoint %d bytes for 30,000 variables, %d for 3,000: it grows with the interior", big, small)
	}
	if states[300] < 5*states[30] {
		t.Errorf("state files of %d and %d bytes: the parts' states are not in them", states[30], states[300])
	}
}

// Every process of a sharded job stops (kill -9) after a checkpoint;
// started again with --resume, the coordinator continues from its latest
// checkpoint in --checkpoint-dir, and new worker processes from the state
// files it names; the run ends with a valid bound, and its --trace holds
// the iterations it ran after the checkpoint, one row each, ending on the
// result. Another model is refused.
func TestShardedFullRestartResumes(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	model := genModel(t, coord, "potts", "--height", "100", "--width", "100", "--labels", "4", "--rho", "0.5", ".ddx")
	dir, sdir := t.TempDir(), t.TempDir()
	args := []string{"run", "--sharded", "--nats", srv.URL(), "--workers", "2", "--job", "shresume", "--tol", "0", "--threads", "1",
		"--checkpoint-every", "20", "--checkpoint-dir", dir, "--state-dir", sdir, "--json", "--max-iter", "300"}
	at := crashAfterCheckpoint(t, coord, worker, srv.URL(), args, model, "r", 40)
	tracePath := filepath.Join(t.TempDir(), "trace.csv")
	second := startProc(t, "coordinator", coord, append(append(args[:len(args):len(args)], "--resume", "--trace", tracePath), model)...)
	checkResumed(t, second, 2*time.Minute, "shresume", at, 20)
	got := second.result(t)
	if got.Iterations != 300 || got.Primal == nil || got.Dual == nil || *got.Primal > *got.Dual {
		t.Fatalf("resumed run: %s after %d, dual %v primal %v", got.Status, got.Iterations, deref(got.Dual), deref(got.Primal))
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := trace.Read(f)
	f.Close()
	if err != nil || len(rows) == 0 || rows[0].Iteration <= 1 {
		t.Fatalf("resumed run's trace: %d rows (%v), want the iterations after the checkpoint", len(rows), err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].Iteration != rows[i-1].Iteration+1 {
			t.Fatalf("trace row %d is iteration %d after %d", i, rows[i].Iteration, rows[i-1].Iteration)
		}
	}
	if last := rows[len(rows)-1]; last.Iteration != got.Iterations || last.Seconds != got.Seconds || last.Dual != *got.Dual || last.Primal != *got.Primal {
		t.Errorf("trace ends on %+v, result %d iterations, %v s, dual %v, primal %v", last, got.Iterations, got.Seconds, *got.Dual, *got.Primal)
	}
	other := genModel(t, coord, "potts", "--height", "101", "--width", "100", "--labels", "4", "--rho", "0.5", ".ddx")
	if b, err := exec.Command(coord, append(append(args[:len(args):len(args)], "--resume"), other)...).CombinedOutput(); err == nil || !strings.Contains(string(b), "another model") {
		t.Errorf("resuming on another model: %v\n%s", err, b)
	}
}

// A sharded job run by a Raft group of three coordinators (run --sharded
// --raft-*): the leader is killed (kill -9) after a committed checkpoint;
// another member takes the job over in a new epoch, every part back at
// that checkpoint (the workers' state files), and the job ends like an
// undisturbed run, its assignment in --out scoring its primal exactly.
func TestKillRaftLeaderShardedMidRun(t *testing.T) {
	coord, worker := binaries(t)
	model := genModel(t, coord, "potts", "--height", "100", "--width", "100", "--labels", "4", "--rho", "0.5", ".ddx")
	m := loadModel(t, model)
	// DD-ADMM given: the undisturbed run has no Raft and would choose
	// distributed TRW-S on this grid. 400 iterations: the leader dies
	// after the checkpoint of iteration 200 or later (every 100), and what
	// follows is the rest of the same run.
	flags := []string{"--sharded", "--algo", "admm", "--json", "--threads", "1", "--tol", "0", "--max-iter", "400"}
	want := runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--local", "--workers", "2", "--quiet", "--state-dir", t.TempDir()}, flags...), model)...)
	srv := startNATS(t, true)
	startWorkerProcs(t, worker, srv.URL(), "shr", 2, "--quiet")
	out := filepath.Join(t.TempDir(), "x.mpe")
	group := raftGroup(t, coord, srv.URL(), model, append(flags[:len(flags):len(flags)], "--state-dir", t.TempDir(), "--out", out))
	at, leader := waitCheckpoint(t, group, 200, time.Minute)
	leader.kill()
	t0 := time.Now()
	rest := survivors(group, leader)
	printed := groupResult(t, rest, 2*time.Minute)
	got := printed[0]
	t.Logf("leader killed after the checkpoint of iteration %d; the job ended %v later: %s after %d, dual %v primal %v (undisturbed %s after %d, dual %v primal %v)",
		at, time.Since(t0).Round(time.Millisecond), got.Status, got.Iterations, deref(got.Dual), deref(got.Primal),
		want.Status, want.Iterations, deref(want.Dual), deref(want.Primal))
	closeResult(t, got, want)
	resumed := false
	for _, p := range rest {
		resumed = resumed || strings.Contains(p.stderr(), "resuming from checkpoint")
	}
	if !resumed {
		t.Error("no member resumed the job from the committed checkpoint")
	}
	if got.Failovers == nil || *got.Failovers < 1 {
		t.Errorf("failovers %v: want the takeover counted", deref(intf(got.Failovers)))
	}
	checkOut(t, "", m, out, got.Primal)
}

// run --sharded with no algorithm on a pairwise grid chooses TRW-S as
// solve does (distributed TRW-S on the worker processes, docs/
// distributed-trws.md), says why, and reports a bound above its primal,
// the exact score of the assignment in --out, on 1..3 workers.
func TestShardedRunChoosesTRWS(t *testing.T) {
	coord, _ := binaries(t)
	model := genModel(t, coord, "potts", "--height", "20", "--width", "15", "--labels", "3", "--rho", "0.5", ".ddx")
	m := loadModel(t, model)
	for w := 1; w <= 3; w++ {
		out := filepath.Join(t.TempDir(), "x.mpe")
		var got result
		runJSONInto(t, 2*time.Minute, coord, &got, "run", "--sharded", "--local", "--workers", fmt.Sprint(w), "--json", "--quiet", "--max-iter", "100", "--out", out, model)
		if got.Algo != "trws" || !strings.Contains(got.Why, "pairwise") || got.Primal == nil || got.Dual == nil ||
			*got.Dual < *got.Primal-1e-9*math.Max(1, math.Abs(*got.Primal)) {
			t.Fatalf("%d workers: %s (%q), dual %v primal %v", w, got.Algo, got.Why, deref(got.Dual), deref(got.Primal))
		}
		checkOut(t, fmt.Sprintf("%d workers: ", w), m, out, got.Primal)
	}
}

// The same grid in row order and with its factors shuffled (a UAI file
// whose factors are not in a local order): run converts both, finds that
// the shuffled one shares most variables between the parts, reorders it
// breadth-first (launch: shardPlan.localize) and plans it with a boundary
// within 1.5x of the row order's (issue 25's bar); both runs reach the
// same dual (the same DD-ADMM iterates, summed in another order).
func TestShuffledModelReordered(t *testing.T) {
	coord, _ := binaries(t)
	rows := genModel(t, coord, "potts", "--height", "40", "--width", "40", "--labels", "3", "--rho", "0.5", ".uai")
	m := loadModel(t, rows)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(m.Factors), func(i, j int) { m.Factors[i], m.Factors[j] = m.Factors[j], m.Factors[i] })
	shuffled := filepath.Join(t.TempDir(), "shuffled.uai")
	if err := modelfile.Save(shuffled, m); err != nil {
		t.Fatal(err)
	}
	var got [2]result
	for k, path := range []string{rows, shuffled} {
		runJSONInto(t, 2*time.Minute, coord, &got[k], "run", "--local", "--workers", "2", "--algo", "admm", "--max-iter", "50", "--tol", "0", "--json", "--quiet", path)
		if got[k].Sharded == nil || got[k].Dual == nil {
			t.Fatalf("%s: no sharded result: %+v", path, got[k])
		}
	}
	row, shuf := got[0].Sharded.Boundary, got[1].Sharded.Boundary
	t.Logf("40x40 grid on 2 workers: boundary %d in row order, %d from the shuffled file (%.2fx)", row, shuf, float64(shuf)/float64(row))
	if float64(shuf) > 1.5*float64(row) {
		t.Errorf("boundary %d from the shuffled file, over 1.5x the row order's %d", shuf, row)
	}
	if a, b := *got[0].Dual, *got[1].Dual; math.Abs(a-b) > 1e-6*math.Max(1, math.Abs(a)) || got[0].Iterations != got[1].Iterations {
		t.Errorf("row order: dual %v after %d; shuffled: %v after %d", a, got[0].Iterations, b, got[1].Iterations)
	}
}

// Evidence on the sharded path: run folds the evidence into the model it
// converts (the observed variables keep one state) and reaches solve's
// iterations and dual on the same model and evidence, its assignment and
// --out holding the observed states; a FILE.evid beside a UAI model is read
// the same way, and the coordinator does not hold the model for it.
func TestShardedRunWithEvidence(t *testing.T) {
	coord, _ := binaries(t)
	model := genModel(t, coord, "potts", "--height", "12", "--width", "12", "--labels", "3", "--rho", "1", ".uai")
	ev := map[int]int{0: 2, 13: 1, 77: 0, 143: 2}
	evid := filepath.Join(t.TempDir(), "m.evid")
	if err := os.WriteFile(evid, []byte("4 0 2 13 1 77 0 143 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--algo", "admm", "--max-iter", "200", "--json"}
	want := runJSON(t, time.Minute, coord, append(append([]string{"solve", "--quiet", "--evidence", evid}, flags...), model)...)
	check := func(what string, got result, out string) {
		t.Helper()
		shardedResult(t, got, want)
		for v, s := range ev {
			if len(got.Assignment) != 144 || got.Assignment[v] != s {
				t.Fatalf("%s: variable %d not in its observed state %d: %v", what, v, s, got.Assignment)
			}
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) != 146 || f[2] != "2" || f[15] != "1" {
			t.Errorf("%s: --out %.60q", what, b)
		}
	}
	out := filepath.Join(t.TempDir(), "x.mpe")
	var got result
	stderr := runJSONErr(t, coord, &got, append(append([]string{"run", "--local", "--workers", "2", "--evidence", evid, "--out", out}, flags...), model)...)
	if strings.Contains(stderr, "holds the whole model") || !strings.Contains(stderr, "evid-") {
		t.Errorf("--evidence: not folded into a sharded model:\n%s", stderr)
	}
	check("--evidence", got, out)
	// The same evidence as FILE.evid beside the model.
	if err := os.WriteFile(model+".evid", []byte("4 0 2 13 1 77 0 143 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = result{}
	stderr = runJSONErr(t, coord, &got, append(append([]string{"run", "--local", "--workers", "2", "--out", out}, flags...), model)...)
	if !strings.Contains(stderr, "evidence beside the model") {
		t.Errorf("FILE.evid: no line says it was read:\n%s", stderr)
	}
	check("FILE.evid", got, out)
}

// runJSONErr runs bin with args (a JSON result on stdout) and returns its
// stderr.
func runJSONErr(t *testing.T, bin string, r any, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal([]byte(stdout.String()), r); err != nil {
		t.Fatalf("%v: %v (%.200q)", args, err, stdout.String())
	}
	return stderr.String()
}
