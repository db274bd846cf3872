package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// cmdRun is `coordinator run`: the same job as solve, spread over worker
// processes that talk over NATS.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("run")
	var f solveFlags
	f.register(fs)
	var nf natsflags.Flags
	nf.Register(fs)
	workers := fs.Int("workers", 2, "number of workers to wait for")
	job := fs.String("job", "", "job `ID` (default: random); namespaces the NATS subjects")
	listen := fs.String("nats-listen", "127.0.0.1:0", "`ADDR` of the embedded NATS server when --nats is not given")
	local := fs.Bool("local", false, "start the worker processes on this machine and stop them at the end")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the workers to join")
	stepTimeout := fs.Duration("step-timeout", 5*time.Minute, "how long to wait for the workers' answers to one iteration")
	lostAfter := fs.Duration("lost-after", 3*time.Second, "a worker silent this long is lost; its part restarts on a spare worker")
	spareWait := fs.Duration("spare-wait", 10*time.Second, "how long a lost worker's part waits for a spare worker before the job continues on the workers left")
	var ck checkpointFlags
	ck.register(fs)
	var rf raftFlags
	rf.register(fs)
	pos, err := parseInterleaved(fs, args, stderr)
	if err != nil {
		return err
	}
	h := sha256.New() // the job's identity: the files, hashed as they are read
	sp, err := f.load(fs, "run", pos, h, stderr)
	if err != nil {
		return err
	}
	if f.exact {
		return usagef("run: --exact runs only in solve")
	}
	if !sp.algo.distributed {
		return usagef("run: --algo %s runs only in solve (run distributes dual decomposition: admm or subgradient)", sp.algo.name)
	}
	opts := sp.dd
	if *workers < 1 {
		return usagef("--workers: %d < 1", *workers)
	}
	if err := ck.check(); err != nil {
		return err
	}
	if err := rf.check(nf.URL, *job, *local); err != nil {
		return err
	}
	if ck.resume && ck.dir == "" {
		return usagef("--resume needs --checkpoint-dir (with Raft, a job resumes by itself)")
	}
	if ck.resume && *job == "" {
		return usagef("--resume needs the --job to continue")
	}
	if *job == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		*job = "job-" + hex.EncodeToString(b[:])
	}
	if err := transport.ValidName(*job); err != nil {
		return usagef("--job %q: %v", *job, err)
	}
	level := slog.LevelInfo
	if f.quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	id, err := cluster.NewIdentity(h.Sum(nil), opts, *workers)
	if err != nil {
		return err
	}
	ro := cluster.RunOptions{Base: *job, Workers: *workers, WaitWorkers: *wait, StepTimeout: *stepTimeout, LostAfter: *lostAfter, SpareWait: *spareWait, Logger: log,
		Checkpoint: &cluster.CheckpointOptions{Every: ck.every, Interval: ck.interval}}
	if ck.every == 0 && ck.interval == 0 {
		ro.Checkpoint = nil
	}
	j := cluster.Job{Name: pos[0], Model: sp.m, Evidence: sp.ev, Options: opts, Run: ro, Identity: id}
	if ck.dir != "" && !rf.enabled() {
		if j.Dir, j.Resume, err = localCheckpoints(ctx, ck, *job, id, log); err != nil {
			return err
		}
	}
	url := nf.URL
	if url == "" {
		host, port, err := net.SplitHostPort(*listen)
		if err != nil {
			return usagef("--nats-listen %q: %v", *listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return usagef("--nats-listen %q: bad port", *listen)
		}
		srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: host, Port: p, User: nf.User, Password: nf.Password, Token: nf.Token})
		if err != nil {
			return fmt.Errorf("embedded NATS server: %w", err)
		}
		defer srv.Shutdown()
		url = srv.URL()
		fmt.Fprintf(stderr, "nats=%s\n", url)
	}
	tr, err := transport.NewNATS(ctx, nf.Options(url, "coordinator-"+*job))
	if err != nil {
		return usageError{err}
	}
	defer tr.Close()
	if *local {
		stop, err := startLocalWorkers(url, *job, *workers, max(1, f.threads / *workers), nf, f.quiet, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	j.Transport = tr
	if !f.quiet {
		j.Progress = func(p solver.Progress) { printProgress(stderr, p) }
	}
	if rf.enabled() {
		return runReplicated(ctx, j, sp, tr, rf, ck, f, log, stdout, stderr)
	}
	before := tr.Conn().Stats()
	o, err := cluster.RunJob(ctx, j)
	if err != nil {
		return err
	}
	if st, n := tr.Conn().Stats(), o.Result.Iterations-o.Stats.Resumed; !f.quiet && n > 0 {
		in, out := st.InBytes-before.InBytes, st.OutBytes-before.OutBytes
		fmt.Fprintf(stderr, "traffic: %d bytes in, %d bytes out at the coordinator, %d bytes per iteration\n",
			in, out, (in+out)/uint64(n))
	}
	return report(o.Result, sp, f, o.Info, stdout, stderr)
}

// startLocalWorkers starts n worker processes (the worker binary beside
// this one, or on PATH) and returns a function that stops and reaps them.
func startLocalWorkers(url, job string, n, threads int, nf natsflags.Flags, quiet bool, stderr io.Writer) (func(), error) {
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
		args := []string{"--nats", url, "--name", fmt.Sprintf("%s-w%d", job, i), "--threads", strconv.Itoa(threads)}
		for flag, v := range map[string]string{"--nats-user": nf.User, "--nats-password": nf.Password, "--nats-token": nf.Token,
			"--nats-creds": nf.Creds, "--nats-ca": nf.CA, "--nats-cert": nf.Cert, "--nats-key": nf.Key} {
			if v != "" {
				args = append(args, flag, v)
			}
		}
		if quiet {
			args = append(args, "--quiet")
		}
		c := exec.Command(bin, args...)
		c.Stderr = stderr
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting worker %d (%s): %w", i, bin, err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

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
