package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ddrun/ddrun/transport"

	_ "github.com/ddrun/ddrun/checkpoint"
	_ "github.com/ddrun/ddrun/jobstate"
)

// startNATS starts an embedded NATS server on loopback (a random port) for
// the test, with JetStream when jetStream is set; it stops with the test.
func startNATS(t *testing.T, jetStream bool) *transport.Embedded {
	t.Helper()
	o := transport.EmbeddedOptions{Host: "127.0.0.1"}
	if jetStream {
		o.JetStreamDir = t.TempDir()
	}
	srv, err := transport.StartEmbedded(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// workerStates are the tests' workers' state directories, one per test:
// every worker a test starts (spares too) shares it.
var workerStates sync.Map

// workerStateDir is the state directory of the test's workers.
func workerStateDir(t *testing.T) string {
	dir, ok := workerStates.Load(t)
	if !ok {
		dir, _ = workerStates.LoadOrStore(t, t.TempDir())
	}
	return dir.(string)
}

// workerDirs are the flags that let a test's worker take sharded parts:
// the test's state directory, and the tests' temporary files as model
// root.
func workerDirs(t *testing.T) []string {
	return []string{"--state-dir", workerStateDir(t), "--model-root", os.TempDir()}
}

// startWorkerProcs starts n worker processes named tag0, tag1, ... on the
// server at url, with one thread each and the extra flags; they take
// sharded parts (the test's state directory, the models of the tests'
// temporary files).
func startWorkerProcs(t *testing.T, worker, url, tag string, n int, extra ...string) []*proc {
	t.Helper()
	var ws []*proc
	for i := range n {
		args := append(append([]string{"--nats", url, "--name", fmt.Sprintf("%s%d", tag, i), "--threads", "1"}, workerDirs(t)...), extra...)
		ws = append(ws, startProc(t, "worker", worker, args...))
	}
	return ws
}

// proc is a process under test whose stderr is watched line by line.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	log    strings.Builder
	lines  chan string // every stderr line, for waitLine
	done   chan struct{}
	err    error
}

// startProc starts bin with args; the process is killed when the test ends.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return startCmd(t, name, exec.Command(bin, args...))
}

// startCmd is startProc for a prepared command (its environment set, say).
func startCmd(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, lines: make(chan string, 4096), done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	if a := p.cmd.SysProcAttr; a != nil && a.Setpgid {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // its group: a shell's children too
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// wait waits for the process to exit.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v\n%s", p.name, timeout, p.stderr())
		return nil
	}
}

func (p *proc) result(t *testing.T) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
		t.Fatalf("%s: result is not JSON: %v\n%q\n%s", p.name, err, p.stdout.String(), p.stderr())
	}
	return r
}

var checkpointLine = regexp.MustCompile(`msg=checkpoint .*?iteration=(\d+)`)

// waitCheckpoint waits until p logs a checkpoint of iteration >= min and
// returns that iteration.
func waitCheckpoint(t *testing.T, ps []*proc, min int, timeout time.Duration) (int, *proc) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		for _, p := range ps {
			select {
			case line := <-p.lines:
				if m := checkpointLine.FindStringSubmatch(line); m != nil {
					if it, _ := strconv.Atoi(m[1]); it >= min {
						return it, p
					}
				}
				continue
			default:
			}
		}
		select {
		case <-deadline:
			var all strings.Builder
			for _, p := range ps {
				fmt.Fprintf(&all, "--- %s\n%s", p.name, p.stderr())
			}
			t.Fatalf("no checkpoint of iteration >= %d within %v\n%s", min, timeout, all.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago,
// for processes that must be told their port before they bind it. They are
// drawn below the kernel's ephemeral range (32768-60999 on Linux): a port
// the kernel hands out for :0 may be taken again by any outgoing
// connection, from this test or another, before the process binds it.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("no %d free loopback ports in 20000-32767 after %d tries", n, tries)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12768)))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// closeResult checks a disturbed run against an undisturbed one: the same
// status and bounds within the solver's tolerance, and about the same
// number of iterations (a restored part re-solves its slaves without warm
// starts, which moves the iterates by rounding only).
func closeResult(t *testing.T, got, want result) {
	t.Helper()
	near := func(a, b *float64, tol float64) bool {
		return a != nil && b != nil && math.Abs(*a-*b) <= tol*math.Max(1, math.Abs(*b))
	}
	if got.Status != want.Status || !near(got.Dual, want.Dual, 1e-6) || !near(got.Primal, want.Primal, 1e-6) ||
		got.Iterations < want.Iterations-5 || got.Iterations > want.Iterations+5 {
		t.Errorf("disturbed: %s after %d, dual %v primal %v; undisturbed: %s after %d, dual %v primal %v",
			got.Status, got.Iterations, deref(got.Dual), deref(got.Primal), want.Status, want.Iterations, deref(want.Dual), deref(want.Primal))
	}
}

// The fault tests' model, made once per test binary run, and its
// undisturbed results by --max-iter, each made once.
var (
	faultOnce  sync.Once
	faultPath  string
	faultFails bool
	faultRefs  sync.Map // --max-iter -> *faultRef
)

// faultRef is solve's result on the fault model at one --max-iter.
type faultRef struct {
	once  sync.Once
	want  result
	fails bool
}

// Iteration budgets of the fault tests. faultRounds is enough for a test
// that disturbs the run at a checkpoint (of iteration 200 or later, every
// 100) or while it runs: what follows the disturbance is the rest of the
// run, which the test compares with the undisturbed one. faultRoundsLong
// is for the tests that need the run to last seconds of wall time after
// the disturbance begins (a kill noticed by --lost-after) or many
// iterations (forgeries up to iteration 600).
const (
	faultRounds     = 600
	faultRoundsLong = 1500
)

// faultFile is the fault tests' model (a 150x150 4-label Potts grid),
// generated once per test binary run beside the binaries, and their flags
// with --max-iter maxIter.
func faultFile(t *testing.T, coord string, maxIter int) (string, []string) {
	t.Helper()
	faultOnce.Do(func() {
		faultFails = true // until the end of this function
		faultPath = filepath.Join(binDir, "faults.uai")
		runOK(t, coord, "gen", "potts", "--height", "150", "--width", "150", "--labels", "4", "--rho", "0.5", "-o", faultPath)
		faultFails = false
	})
	if faultFails {
		t.Fatal("the fault tests' model failed (see the first test that made it)")
	}
	// DD-ADMM: the fault tests are about its failover, checkpoints and
	// protocol (run's default on this grid is distributed TRW-S, which
	// fails on a lost worker: TestLostWorkerFailsTheRun).
	return faultPath, []string{"--algo", "admm", "--json", "--threads", "1", "--tol", "0", "--max-iter", strconv.Itoa(maxIter)}
}

// faultModel is faultFile and solve's result with those flags, which
// every disturbed run must reproduce: made once per --max-iter and test
// binary run, on every core (DD-ADMM's iterates are the same on any
// thread count: consensus.TestThreadsGiveIdenticalResults).
func faultModel(t *testing.T, coord string, maxIter int) (string, []string, result) {
	t.Helper()
	path, flags := faultFile(t, coord, maxIter)
	v, _ := faultRefs.LoadOrStore(maxIter, new(faultRef))
	ref := v.(*faultRef)
	ref.once.Do(func() {
		ref.fails = true // until the end of this function
		cores := []string{"--threads", strconv.Itoa(runtime.NumCPU())}
		ref.want = runJSON(t, time.Minute, coord, append(append(append([]string{"solve", "--quiet"}, flags...), cores...), path)...)
		ref.fails = false
	})
	if ref.fails {
		t.Fatalf("the fault tests' reference run at %d iterations failed (see the first test that made it)", maxIter)
	}
	return path, flags, ref.want
}

// crashAfterCheckpoint runs coord with args on model over two worker
// processes (tag+"a"), kills them all (kill -9) once the coordinator has
// logged a checkpoint of iteration after or later, and starts two fresh
// workers (tag+"b") for the resumed run; it returns the iteration of the
// checkpoint logged.
func crashAfterCheckpoint(t *testing.T, coord, worker, url string, args []string, model, tag string, after int) int {
	t.Helper()
	ws := startWorkerProcs(t, worker, url, tag+"a", 2, "--quiet")
	first := startProc(t, "coordinator", coord, append(args, model)...)
	at, _ := waitCheckpoint(t, []*proc{first}, after, time.Minute)
	for _, p := range append(ws, first) {
		p.kill()
	}
	startWorkerProcs(t, worker, url, tag+"b", 2, "--quiet")
	return at
}

// checkResumed waits for p, a coordinator started with --resume, and
// asserts it resumed job from the newest checkpoint whose manifest was
// written: at, the one logged before the kill or, if the kill came just
// after, the next one, every iterations on.
func checkResumed(t *testing.T, p *proc, timeout time.Duration, job string, at, every int) {
	t.Helper()
	if err := p.wait(t, timeout); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, p.stderr())
	}
	m := regexp.MustCompile(`resuming from checkpoint" job=` + job + ` iteration=(\d+)`).FindStringSubmatch(p.stderr())
	if m == nil {
		t.Fatalf("no resume logged:\n%s", p.stderr())
	}
	if from, _ := strconv.Atoi(m[1]); from != at && from != at+every {
		t.Errorf("resumed from iteration %d; the last checkpoint logged was %d", from, at)
	}
}

// Every process stops (kill -9: coordinator and workers) after a
// checkpoint; started again with --resume, the single coordinator
// continues from its latest checkpoint in --checkpoint-dir and ends like
// an undisturbed run; before it, a coordinator with another job key is
// refused the sealed checkpoints.
func TestFullRestartResumesFromCheckpoint(t *testing.T) {
	coord, worker := binaries(t)
	model, flags, want := faultModel(t, coord, faultRounds)
	srv := startNATS(t, false)
	dir := t.TempDir()
	args := append([]string{"run", "--nats", srv.URL(), "--workers", "2", "--job", "restart", "--checkpoint-dir", dir, "--checkpoint-every", "100"}, flags...)
	at := crashAfterCheckpoint(t, coord, worker, srv.URL(), args, model, "", 200)
	// The checkpoints are sealed with the job key: another key cannot
	// resume them, and says why.
	foreign := startProc(t, "coordinator", coord, append(append(args[:len(args):len(args)], "--resume", "--job-key-file", keyFile(t)), model)...)
	if err := foreign.wait(t, time.Minute); err == nil || !strings.Contains(foreign.stderr(), "sealed with another key") {
		t.Fatalf("resumed with another job key: %v\n%s", err, foreign.stderr())
	}
	second := startProc(t, "coordinator", coord, append(append(args[:len(args):len(args)], "--resume"), model)...)
	checkResumed(t, second, time.Minute, "restart", at, 100)
	closeResult(t, second.result(t), want)
}

// Three coordinators in a Raft group; the leader is killed with SIGKILL
// mid-run. A follower becomes leader, takes the workers over with a new
// epoch, resumes from the latest committed checkpoint, and prints the
// result; the other member exits 0 too.
func TestKillRaftLeaderMidRun(t *testing.T) {
	coord, worker := binaries(t)
	model, flags, want := faultModel(t, coord, faultRounds)
	srv := startNATS(t, true)
	startWorkerProcs(t, worker, srv.URL(), "rw", 2, "--quiet")
	group := raftGroup(t, coord, srv.URL(), model, append(flags[:len(flags):len(flags)], "--metrics", "127.0.0.1:0"))
	at, leader := waitCheckpoint(t, group, 200, time.Minute)
	raftMetrics(t, group, leader)
	leader.kill()
	t0 := time.Now()
	rest := survivors(group, leader)
	printed := groupResult(t, rest, 90*time.Second)
	t.Logf("leader killed after the checkpoint of iteration %d; the job ended %v later", at, time.Since(t0).Round(time.Millisecond))
	got := printed[0]
	closeResult(t, got, want)
	// Recovery times, for the record: election, resume, workers back.
	for _, p := range rest {
		for _, ev := range []string{"role=leader", "resuming from checkpoint", "workers joined"} {
			if at, ok := logTime(p.stderr(), ev); ok {
				t.Logf("%s: %q %v after the kill", p.name, ev, at.Sub(t0).Round(time.Millisecond))
			}
		}
	}
	t.Logf("failovers %v, redone iterations %v, seconds %.3f", deref(intf(got.Failovers)), deref(intf(got.Redone)), got.Seconds)
	// The leader was killed just after it logged a committed checkpoint:
	// what is lost is the few iterations it ran since, at most one
	// checkpoint interval (100).
	if got.Failovers == nil || *got.Failovers < 1 || got.Redone == nil || *got.Redone < 0 || *got.Redone > 100 {
		t.Errorf("failovers %v, redone %v: want >= 1, and at most one checkpoint interval", deref(intf(got.Failovers)), deref(intf(got.Redone)))
	}
	for _, p := range rest {
		if !strings.Contains(p.stderr(), "role=leader") && !strings.Contains(p.stderr(), "role=follower") {
			t.Errorf("%s logged no role:\n%s", p.name, p.stderr())
		}
	}
	// seconds is the job's wall time, the outage included: at least from
	// the first leader's start to the new leader's workers joining.
	first, ok := logTime(leader.stderr(), "leading the job")
	var joined time.Time
	for _, p := range rest {
		if at, ok := logTime(p.stderr(), "workers joined"); ok && at.After(joined) {
			joined = at
		}
	}
	if ok && !joined.IsZero() && got.Seconds < joined.Sub(first).Seconds() {
		t.Errorf("seconds %.3f, but the job was led from %v and its workers joined the new leader %v later",
			got.Seconds, first.Format(time.RFC3339Nano), joined.Sub(first))
	}
}

// Every process of a Raft-replicated job is killed after a checkpoint;
// started again with the same Raft dirs, the group resumes the job by
// itself.
func TestRaftFullRestart(t *testing.T) {
	coord, worker := binaries(t)
	model, flags, want := faultModel(t, coord, faultRounds)
	// Sharded by default: the workers save their parts' states beside the
	// model, where TestKillRaftLeaderMidRun's job of the same name left
	// files of later iterations (shard.StateFiles prunes them first).
	srv := startNATS(t, true)
	ws := startWorkerProcs(t, worker, srv.URL(), "fw", 2, "--quiet")
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ports := freePorts(t, 3)
	group := raftGroupAt(t, coord, srv.URL(), model, flags, dirs, ports)
	waitCheckpoint(t, group, 200, time.Minute)
	for _, p := range append(ws, group...) {
		p.kill()
	}
	startWorkerProcs(t, worker, srv.URL(), "fw", 2, "--quiet")
	group = raftGroupAt(t, coord, srv.URL(), model, flags, dirs, ports)
	printed := groupResult(t, group, 90*time.Second)
	closeResult(t, printed[0], want)
	resumed := false
	for _, p := range group {
		resumed = resumed || strings.Contains(p.stderr(), "resuming from checkpoint")
	}
	if !resumed {
		t.Error("the restarted group did not resume from a checkpoint")
	}
}

// survivors is the group without the (killed) leader.
func survivors(group []*proc, leader *proc) []*proc {
	var rest []*proc
	for _, p := range group {
		if p != leader {
			rest = append(rest, p)
		}
	}
	return rest
}

// groupResult waits for every member of a Raft group to exit 0 and
// returns the one result printed (the leader's at the end).
func groupResult(t *testing.T, group []*proc, timeout time.Duration) []result {
	t.Helper()
	var printed []result
	for _, p := range group {
		if err := p.wait(t, timeout); err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, p.stderr())
		}
		if p.stdout.Len() > 0 {
			printed = append(printed, p.result(t))
		}
	}
	if len(printed) != 1 {
		t.Fatalf("%d coordinators printed a result, want 1", len(printed))
	}
	return printed
}

// logTime returns the time of the last stderr line containing ev.
func logTime(log, ev string) (time.Time, bool) {
	var at time.Time
	ok := false
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, ev) || !strings.HasPrefix(line, "time=") {
			continue
		}
		f := strings.Fields(line)[0]
		if tm, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f, "time=")); err == nil {
			at, ok = tm, true
		}
	}
	return at, ok
}

func intf(p *int) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func raftGroup(t *testing.T, coord, url, model string, flags []string) []*proc {
	return raftGroupAt(t, coord, url, model, flags, []string{t.TempDir(), t.TempDir(), t.TempDir()}, freePorts(t, 3))
}

func raftGroupAt(t *testing.T, coord, url, model string, flags []string, dirs []string, ports []int) []*proc {
	t.Helper()
	var group []*proc
	for i := range 3 {
		group = append(group, raftGroupMember(t, coord, url, model, flags, dirs, ports, i))
	}
	return group
}

// raftGroupMember starts member i of a group of three.
func raftGroupMember(t *testing.T, coord, url, model string, flags []string, dirs []string, ports []int, i int) *proc {
	t.Helper()
	var peers []string
	for k, p := range ports {
		peers = append(peers, fmt.Sprintf("c%d=127.0.0.1:%d", k, p))
	}
	args := append([]string{"run", "--nats", url, "--workers", "2", "--job", "raftjob", "--checkpoint-every", "100",
		"--raft-id", fmt.Sprintf("c%d", i), "--raft-bind", fmt.Sprintf("127.0.0.1:%d", ports[i]),
		"--raft-peers", strings.Join(peers, ","), "--raft-dir", dirs[i]}, flags...)
	return startProc(t, fmt.Sprintf("coordinator c%d", i), coord, append(args, model)...)
}
