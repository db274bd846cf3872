package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sharded run's worker stopped (SIGSTOP) past --lost-after, as a process
// starved on a loaded machine, is lost and ends the epoch; with no spare
// the next epoch has one worker of two. Continued (SIGCONT), the worker
// speaks again, is taken back and holds its part again: the run ends after
// the undisturbed run's iterations (--max-iter, with --tol 0), with a
// valid bound and a primal that is the exact score of the assignment in
// --out.
func TestStoppedShardedWorkerRejoins(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	model := genModel(t, coord, "potts", "--height", "120", "--width", "120", "--labels", "4", "--rho", "0.5", ".ddx")
	m := loadModel(t, model)
	states := workerStateDir(t)
	ws := startWorkerProcs(t, worker, srv.URL(), "rj", 2, "--quiet")
	args := func(job, out string) []string {
		return []string{"run", "--nats", srv.URL(), "--workers", "2", "--job", job, "--algo", "admm", "--lost-after", "1s",
			"--checkpoint-every", "10", "--state-dir", states, "--json", "--threads", "1", "--tol", "0", "--max-iter", "100", "--out", out, model}
	}
	out := filepath.Join(t.TempDir(), "x.mpe")
	run := startProc(t, "coordinator", coord, args("rjslow", out)...)
	waitStateFiles(t, states, "rjslow", run)
	pid := ws[0].cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // past --lost-after: the epoch ends
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := run.wait(t, 2*time.Minute); err != nil {
		t.Fatalf("run after a stopped worker: %v\n%s", err, run.stderr())
	}
	log := run.stderr()
	if !strings.Contains(log, "worker lost") || !strings.Contains(log, "taken back") || !strings.Contains(log, "worker=rj0") {
		t.Errorf("no loss and return of rj0 logged:\n%s", log)
	}
	got := run.result(t)
	if got.Sharded == nil || got.Sharded.Failovers != 1 || got.Sharded.Restored != 1 {
		t.Fatalf("sharded result %s: want 1 failover restored from a checkpoint", run.stdout.String())
	}
	if got.Iterations != 100 { // --tol 0: an undisturbed run's --max-iter
		t.Errorf("%d iterations, want the 100 of an undisturbed run", got.Iterations)
	}
	if got.Primal == nil || got.Dual == nil || *got.Primal > *got.Dual+1e-9*math.Abs(*got.Dual) {
		t.Fatalf("%s dual %v primal %v", got.Status, deref(got.Dual), deref(got.Primal))
	}
	checkOut(t, "", m, out, got.Primal)
}
