package natsflags

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Workers are worker processes to start on this machine (coordinator
// run --local, serve --local-workers): N of them, named JOB-wI, of Threads
// each, on the NATS server at URL with the credentials of NATS (in their
// environment, never on their command line) and Env added last (the job
// key), their stderr to Stderr, quiet or logging JSON.
type Workers struct {
	URL, Job       string
	N, Threads     int
	NATS           Flags
	Env            []string
	Quiet, JSONLog bool
	// Insecure starts them with --insecure (the coordinator's): no key.
	Insecure bool
	// StateDir and ModelRoots, when set, are their --state-dir and
	// --model-root (a sharded run's directories: launch.Sharded.WorkerDirs).
	StateDir   string
	ModelRoots []string
	Stderr     io.Writer
}

// ErrNoWorker: no worker binary beside this program or on PATH.
var ErrNoWorker = errors.New("--local: no worker binary beside the coordinator or on PATH (go build -o DIR ./cmd/worker)")

// StartWorkers starts the worker processes (the worker binary beside this
// program, or on PATH) and returns a function that stops and reaps them.
func StartWorkers(w Workers) (func(), error) {
	url, job, n, threads, nf, env, quiet := w.URL, w.Job, w.N, w.Threads, w.NATS, w.Env, w.Quiet
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
		c := workerCmd(bin, url, fmt.Sprintf("%s-w%d", job, i), threads, nf, quiet, os.Environ())
		if w.JSONLog {
			c.Args = append(c.Args, "--log-format", "json")
		}
		if w.Insecure {
			c.Args = append(c.Args, "--insecure")
		}
		if w.StateDir != "" {
			c.Args = append(c.Args, "--state-dir", w.StateDir)
		}
		for _, r := range w.ModelRoots {
			c.Args = append(c.Args, "--model-root", r)
		}
		c.Stderr = w.Stderr
		c.Env = append(c.Env, env...) // the job key, last so that it wins
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting worker %d (%s): %w", i, bin, err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// workerCmd is the command of one --local worker: the secrets travel
// in its environment (Flags.Child), which replaces the
// DDRUN_NATS_ variables of environ, never on its command line.
func workerCmd(bin, url, name string, threads int, nf Flags, quiet bool, environ []string) *exec.Cmd {
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

func workerBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "worker")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("worker")
	if err != nil {
		return "", ErrNoWorker
	}
	return p, nil
}
