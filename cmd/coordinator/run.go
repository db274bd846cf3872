package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// runFlags are the flags of `coordinator run` beyond solve's.
type runFlags struct {
	nats                                    natsflags.Flags
	key                                     natsflags.JobKey
	workers                                 int
	job, listen                             string
	local, sharded                          bool
	wait, stepTimeout, lostAfter, spareWait time.Duration
	ck                                      checkpointFlags
	raft                                    raftFlags
	metrics                                 string
	obs                                     *metrics.Metrics // --metrics' series, nil without it
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.nats.Register(fs)
	r.nats.RegisterRetry(fs, 10*time.Second)
	r.key.Register(fs)
	fs.StringVar(&r.metrics, "metrics", "", "serve /metrics (Prometheus), /healthz and /readyz on `ADDR` (host:port; port 0 picks one, printed as metrics=URL)")
	fs.IntVar(&r.workers, "workers", 2, "number of workers to wait for")
	fs.StringVar(&r.job, "job", "", "job `ID` (default: random); namespaces the NATS subjects")
	fs.StringVar(&r.listen, "nats-listen", "127.0.0.1:0", "`ADDR` of the embedded NATS server when --nats is not given")
	fs.BoolVar(&r.local, "local", false, "start the worker processes on this machine and stop them at the end")
	fs.BoolVar(&r.sharded, "sharded", false, "no process holds the whole model: each worker reads its part of MODEL (an indexed .ddx file at a path every worker sees) and the coordinator keeps only the boundary (docs/scaling.md)")
	fs.DurationVar(&r.wait, "wait", 30*time.Second, "how long to wait for enough workers to join the pool (a job whose workers are busy with other jobs waits for them)")
	fs.DurationVar(&r.stepTimeout, "step-timeout", 5*time.Minute, "how long to wait for the workers' answers to one iteration")
	fs.DurationVar(&r.lostAfter, "lost-after", 3*time.Second, "a worker silent this long is lost; its part restarts on a spare worker")
	fs.DurationVar(&r.spareWait, "spare-wait", 10*time.Second, "how long a lost worker's part waits for a spare worker before the job continues on the workers left")
	r.ck.register(fs)
	r.raft.register(fs)
}

// check validates the flags, resolves the NATS secrets (flag, file or
// environment) and draws a job id when none was given.
func (r *runFlags) check() error {
	if err := r.nats.Resolve(); err != nil {
		return usageError{err}
	}
	if r.workers < 1 {
		return usagef("--workers: %d < 1", r.workers)
	}
	if err := r.ck.check(); err != nil {
		return err
	}
	if err := r.raft.check(r.nats.URL, r.job, r.local); err != nil {
		return err
	}
	if r.ck.resume && r.ck.dir == "" {
		return usagef("--resume needs --checkpoint-dir (with Raft, a job resumes by itself)")
	}
	if r.ck.resume && r.job == "" {
		return usagef("--resume needs the --job to continue")
	}
	if r.job == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		r.job = "job-" + hex.EncodeToString(b[:])
	}
	if err := transport.ValidName(r.job); err != nil {
		return usagef("--job %q: %v", r.job, err)
	}
	return nil
}

// runOptions are the distributed run's settings.
func (r *runFlags) runOptions(log *slog.Logger) cluster.RunOptions {
	ro := cluster.RunOptions{Base: r.job, Workers: r.workers, WaitWorkers: r.wait, StepTimeout: r.stepTimeout, LostAfter: r.lostAfter, SpareWait: r.spareWait, Logger: log,
		Checkpoint: &cluster.CheckpointOptions{Every: r.ck.every, Interval: r.ck.interval}}
	if r.ck.every == 0 && r.ck.interval == 0 {
		ro.Checkpoint = nil
	}
	return ro
}

// connect starts the --metrics endpoint, then connects to --nats (trying
// for --connect-timeout while the server is not up), or starts an
// embedded NATS server on --nats-listen and prints its URL. close
// releases them.
func (r *runFlags) connect(ctx context.Context, log *slog.Logger, stderr io.Writer) (tr *transport.NATS, url string, close func(), err error) {
	stopMetrics, err := r.startMetrics(ctx, stderr)
	if err != nil {
		return nil, "", nil, err
	}
	url = r.nats.URL
	var srv *transport.Embedded
	defer func() {
		if err != nil {
			stopMetrics()
		}
	}()
	if url == "" {
		host, port, err := net.SplitHostPort(r.listen)
		if err != nil {
			return nil, "", nil, usagef("--nats-listen %q: %v", r.listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, "", nil, usagef("--nats-listen %q: bad port", r.listen)
		}
		srv, err = transport.StartEmbedded(transport.EmbeddedOptions{Host: host, Port: p, User: r.nats.User, Password: r.nats.Password, Token: r.nats.Token})
		if err != nil {
			return nil, "", nil, fmt.Errorf("embedded NATS server: %w", err)
		}
		url = srv.URL()
		fmt.Fprintf(stderr, "nats=%s\n", url)
	}
	tr, err = r.nats.Connect(ctx, r.nats.Options(url, "coordinator-"+r.job), log)
	if err != nil {
		if srv != nil {
			srv.Shutdown()
		}
		return nil, "", nil, usageError{err}
	}
	natsflags.Observe(r.obs, tr)
	return tr, url, func() {
		stopMetrics()
		tr.Close()
		if srv != nil {
			srv.Shutdown()
		}
	}, nil
}

// cmdRun is `coordinator run`: the same job as solve, spread over worker
// processes that talk over NATS.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	fs := flagSet("run")
	var f solveFlags
	f.register(fs)
	var r runFlags
	r.register(fs)
	defer func() {
		if err != nil {
			err = redactedError{err, r.nats.Redact}
		}
	}()
	pos, err := parseInterleaved(fs, args, stderr)
	if err != nil {
		return err
	}
	if r.sharded {
		return runSharded(ctx, start, fs, f, r, pos, stdout, stderr)
	}
	h := sha256.New() // the job's identity: the files, hashed as they are read
	sp, err := f.load(ctx, start, fs, "run", pos, h, stderr)
	if err != nil {
		return err
	}
	if f.exact {
		return usagef("run: --exact runs only in solve")
	}
	if !sp.algo.distributed {
		return usagef("run: --algo %s runs only in solve (run distributes dual decomposition: admm or subgradient)", sp.algo.name)
	}
	if err := r.check(); err != nil {
		return err
	}
	level := slog.LevelInfo
	if f.quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	id, err := cluster.NewIdentity(h.Sum(nil), sp.dd, r.workers)
	if err != nil {
		return err
	}
	j := cluster.Job{Name: pos[0], Model: sp.m, Evidence: sp.ev, Options: sp.dd, Run: r.runOptions(log), Identity: id}
	if r.ck.dir != "" && !r.raft.enabled() {
		if j.Dir, j.Resume, err = localCheckpoints(ctx, r.ck, r.job, id, log); err != nil {
			return err
		}
	}
	tr, url, closeNATS, err := r.connect(ctx, log, stderr)
	if err != nil {
		return err
	}
	defer closeNATS()
	j.Run.Hooks = r.hooks()
	sealed, unseal, err := r.key.Wrap(tr, log) // with a job key, every message sealed
	if err != nil {
		return usagef("%v", err)
	}
	defer unseal()
	j.Transport = sealed
	if r.local {
		stop, err := startLocalWorkers(url, r.job, r.workers, max(1, f.threads/r.workers), r.nats, r.key.Env(), f.quiet, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	if !f.quiet {
		j.Progress = func(p solver.Progress) { printProgress(stderr, p) }
	}
	j.Progress = r.observed(j.Progress)
	if r.raft.enabled() {
		return runReplicated(ctx, j, sp, tr, &r, f, log, stdout, stderr)
	}
	before := tr.Conn().Stats()
	o, err := cluster.RunJob(ctx, j)
	if err != nil {
		return err
	}
	r.obs.ObserveResult(o.Result)
	if st, n := tr.Conn().Stats(), o.Result.Iterations-o.Stats.Resumed; !f.quiet && n > 0 {
		in, out := st.InBytes-before.InBytes, st.OutBytes-before.OutBytes
		fmt.Fprintf(stderr, "traffic: %d bytes in, %d bytes out at the coordinator, %d bytes per iteration\n",
			in, out, (in+out)/uint64(n))
	}
	return report(o.Result, sp, f, o.Info, stdout, stderr)
}

// startLocalWorkers starts n worker processes (the worker binary beside
// this one, or on PATH) and returns a function that stops and reaps them.
func startLocalWorkers(url, job string, n, threads int, nf natsflags.Flags, env []string, quiet bool, stderr io.Writer) (func(), error) {
	bin, err := workerBinary()
	if err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range cmds {
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		}
	}
	for i := 0; i < n; i++ {
		c := localWorkerCmd(bin, url, fmt.Sprintf("%s-w%d", job, i), threads, nf, quiet, os.Environ())
		c.Stderr = stderr
		c.Env = append(c.Env, env...) // the job key, last so that it wins
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting worker %d (%s): %w", i, bin, err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// localWorkerCmd is the command of one --local worker: the secrets travel
// in its environment (natsflags.Flags.Child), which replaces the
// DDRUN_NATS_ variables of environ, never on its command line.
func localWorkerCmd(bin, url, name string, threads int, nf natsflags.Flags, quiet bool, environ []string) *exec.Cmd {
	nargs, nenv := nf.Child(url)
	args := append([]string{"--name", name, "--threads", strconv.Itoa(threads)}, nargs...)
	if quiet {
		args = append(args, "--quiet")
	}
	c := exec.Command(bin, args...)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "DDRUN_NATS_") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, nenv...)
	return c
}

// redactedError prints err through redact (the NATS secrets and URL
// passwords hidden); errors.As and Is see err.
type redactedError struct {
	err    error
	redact func(string) string
}

func (e redactedError) Error() string { return e.redact(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

func workerBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "worker")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("worker")
	if err != nil {
		return "", usagef("--local: no worker binary beside the coordinator or on PATH (go build -o DIR ./cmd/worker)")
	}
	return p, nil
}
