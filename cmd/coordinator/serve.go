package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/service"
)

// serveFlags are the flags of `coordinator serve`.
type serveFlags struct {
	listen, dataDir        string
	workersMin, localWorks int
	maxJobs, maxLocal      int
	maxUpload              int64
	wait, stepTimeout      time.Duration
	quiet                  bool
	// r holds the NATS flags (--nats, credentials, --job-key-file,
	// --nats-listen) and connects as run does.
	r runFlags
}

func (s *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8080", "`ADDR` of the HTTP API (port 0: any free port; the address is printed on stderr as http=URL)")
	fs.StringVar(&s.dataDir, "data-dir", "ddrun-data", "`DIR` that keeps the jobs (model, state, result, trace), so that a restarted service lists them")
	fs.IntVar(&s.workersMin, "workers-min", 0, "/readyz answers 200 only while at least `N` workers are in the pool")
	fs.IntVar(&s.localWorks, "local-workers", 0, "start `N` worker processes on this machine (the worker binary beside the coordinator, or on PATH) and stop them at the end")
	fs.IntVar(&s.maxJobs, "max-jobs", 1000, "most jobs kept: a new job evicts the oldest finished one")
	fs.IntVar(&s.maxLocal, "max-running", 1, "most jobs with workers=0 that run at once in this process (the others wait in the queue)")
	fs.Int64Var(&s.maxUpload, "max-upload", 256<<20, "largest model upload in `BYTES` (larger: HTTP 413)")
	fs.Var(cli.Duration(&s.wait, 10*time.Minute), "wait", "how long a distributed job waits for its workers to be free before it fails")
	fs.Var(cli.Duration(&s.stepTimeout, 5*time.Minute), "step-timeout", "how long a distributed job waits for the workers' answers to one iteration")
	fs.BoolVar(&s.quiet, "quiet", false, "log warnings only")
	s.r.nats.Register(fs)
	s.r.key.Register(fs)
	fs.StringVar(&s.r.listen, "nats-listen", "127.0.0.1:0", "`ADDR` of the embedded NATS server when --nats is not given")
}

func (s *serveFlags) check() error {
	if err := s.r.nats.Resolve(); err != nil {
		return usageError{err}
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
	}{{"--workers-min", int64(s.workersMin), 0}, {"--local-workers", int64(s.localWorks), 0}, {"--max-jobs", int64(s.maxJobs), 1},
		{"--max-running", int64(s.maxLocal), 1}, {"--max-upload", s.maxUpload, 1}} {
		if c.v < c.min {
			return usagef("%s: %d < %d", c.name, c.v, c.min)
		}
	}
	if s.dataDir == "" {
		return usagef("--data-dir: empty")
	}
	s.r.job = "serve" // the NATS client's name: coordinator-serve
	return nil
}

// cmdServe is `coordinator serve`: the job service (package service) with
// this command's runner, on HTTP and on NATS request/reply. Its log, the
// job service's included, goes to con (--log-format).
func cmdServe(ctx context.Context, args []string, con *cli.Console) (err error) {
	fs := flagSet("serve")
	var sf serveFlags
	sf.register(fs)
	defer func() {
		if err != nil {
			err = redactedError{err, sf.r.nats.Redact}
		}
	}()
	pos, err := parseFlags(fs, args, con)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if sf.quiet {
		level = slog.LevelWarn
	}
	con.Start(cli.Options{Level: level, Quiet: true}) // no progress: the jobs' go to their traces
	if len(pos) != 0 {
		return usagef("serve: no arguments expected, got %q", pos)
	}
	if err := sf.check(); err != nil {
		return err
	}
	log := con.Logger()
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return usagef("--listen %q: %v", sf.listen, err)
	}
	defer ln.Close()
	ns := sf.r.natsSession(sf.r.localWorkers("serve", sf.localWorks, 1, sf.quiet, con), con)
	if err := ns.Open(ctx); err != nil {
		return flagsError(err)
	}
	defer ns.Close()
	met, err := metrics.New(metrics.Options{Role: metrics.Coordinator})
	if err != nil {
		return err
	}
	natsflags.Observe(met, ns.NATS)
	url := "http://" + ln.Addr().String()
	err = launch.Serve(ctx, ln, launch.ServeOptions{
		Service: service.Options{Dir: sf.dataDir, MaxJobs: sf.maxJobs, MaxUpload: sf.maxUpload, MaxLocal: sf.maxLocal},
		NATS:    ns.NATS, Transport: ns.Transport, WorkersMin: sf.workersMin, Wait: sf.wait, StepTimeout: sf.stepTimeout,
		Logger: log, Metrics: met, Started: func() { con.Print("http", "http="+url, "http", url) },
	})
	if err != nil {
		return err
	}
	log.Info("service stopping")
	return nil
}
