package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/metrics"
)

// serveFlags are the flags of `coordinator serve`: the service's own
// (launch.ServeConfig) and those of its distributed jobs.
type serveFlags struct {
	cfg               launch.ServeConfig
	wait, stepTimeout time.Duration
	// r holds the NATS flags (--nats, credentials, --job-key-file,
	// --nats-listen) and connects as run does.
	r runFlags
}

func (s *serveFlags) register(fs *flag.FlagSet) {
	s.cfg.Register(fs)
	fs.Var(cli.Duration(&s.wait, 10*time.Minute), "wait", "how long a distributed job waits for its workers to be free before it fails")
	fs.Var(cli.Duration(&s.stepTimeout, 5*time.Minute), "step-timeout", "how long a distributed job waits for the workers' answers to one iteration")
	s.r.nats.Register(fs)
	s.r.nats.RegisterRetry(fs, 10*time.Second)
	s.r.key.Register(fs)
	fs.StringVar(&s.r.listen, "nats-listen", "127.0.0.1:0", "`ADDR` of the embedded NATS server when --nats is not given")
}

func (s *serveFlags) check() error {
	if err := s.r.nats.Resolve(); err != nil {
		return usageError{err}
	}
	if err := s.cfg.Check(); err != nil {
		return usageError{err}
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
	if sf.cfg.Quiet {
		level = slog.LevelWarn
	}
	con.Start(cli.Options{Level: level, Quiet: true}) // no progress: the jobs' go to their traces
	if len(pos) != 0 {
		return usagef("serve: no arguments expected, got %q", pos)
	}
	if err := sf.check(); err != nil {
		return err
	}
	l, err := sf.cfg.Open()
	if err != nil {
		return inputError(err)
	}
	defer l.Close()
	local := sf.r.localWorkers("serve", sf.cfg.LocalWorkers, 1, sf.cfg.Quiet, con)
	local.ModelRoots = []string{l.Dir()} // the jobs' converted models
	ns := sf.r.natsSession(local, con)
	if err := ns.Open(ctx); err != nil {
		return flagsError(err)
	}
	defer ns.Close()
	met, err := metrics.New(metrics.Options{Role: metrics.Coordinator})
	if err != nil {
		return err
	}
	natsflags.Observe(met, ns.NATS)
	err = launch.Serve(ctx, l, launch.ServeOptions{NATS: ns.NATS, Transport: ns.Transport, Wait: sf.wait, StepTimeout: sf.stepTimeout,
		Logger: con.Logger(), Metrics: met, Print: con.Print})
	if err != nil {
		return err
	}
	con.Logger().Info("service stopping")
	return nil
}
