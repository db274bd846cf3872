// Command worker is a ddrun worker process: it connects to a NATS server,
// announces itself, and solves the slaves that coordinators assign it, job
// after job, and the subtrees of distributed branch and bound (run
// --exact, package dsearch), until it is stopped (SIGINT or SIGTERM).
//
//	worker --nats URL [--threads N] [--name NAME] [--log-format text|json] [NATS credential flags] [--job-key-file F]
//	       [--connect-timeout D] [--metrics ADDR] [--state-dir DIR [--model-root DIR]...]
//	worker version
//
// It keeps trying to reach the NATS server for --connect-timeout (default
// 30s: in Kubernetes it may start before NATS), and once connected it
// reconnects after any loss of the connection for as long as it runs,
// logging the loss and the return. --metrics serves its Prometheus series,
// /healthz and /readyz (ready while connected).
//
// It writes only in --state-dir, and reads a sharded part's model only
// there or under a --model-root (docs/security.md).
//
// With a job key (--job-key-file, or $DDRUN_JOB_KEY) every message is
// sealed with it and only coordinators holding the same key are heard
// (docs/security.md).
//
// Secrets come from files or the environment (DDRUN_NATS_PASSWORD,
// DDRUN_NATS_TOKEN, DDRUN_NATS_URL; see package natsflags), and are
// redacted from what it prints.
//
// Exit status: 0 after a clean stop, 2 for bad flags or an unreachable
// server (one line on stderr), 1 for an internal failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/transport"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(os.Stdout, cli.VersionLine("worker"))
		return 0
	}
	con := cli.New(stderr)
	fail := func(code int, format string, a ...any) int {
		if con.Format == "" {
			con.Format = cli.FormatIn(args)
		}
		con.Error("worker", fmt.Sprintf(format, a...))
		return code
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var nf natsflags.Flags
	nf.Register(fs)
	nf.RegisterRetry(fs, 30*time.Second)
	metricsAddr := fs.String("metrics", "", "serve /metrics (Prometheus), /healthz and /readyz on `ADDR` (host:port; port 0 picks one, printed as metrics=URL)")
	var key natsflags.JobKey
	key.Register(fs)
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "goroutines for this worker's slaves")
	host, _ := os.Hostname()
	name := fs.String("name", transport.SanitizeName(fmt.Sprintf("%s-%d", host, os.Getpid())), "worker `NAME`, unique among the workers ([A-Za-z0-9_-])")
	quiet := fs.Bool("quiet", false, "log only warnings and errors")
	var wo launch.Worker
	wo.RegisterDirs(fs)
	con.Register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: worker --nats URL [--threads N] [--name NAME]\nsecrets: --nats-password-file/--nats-token-file, or $"+natsflags.EnvPassword+"/$"+natsflags.EnvToken+" (flags show in ps)")
			fs.PrintDefaults()
			return 0
		}
		return fail(2, "%v", err)
	}
	if err := nf.Resolve(); err != nil {
		return fail(2, "%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return fail(2, "unexpected argument %q", fs.Arg(0))
	case nf.URL == "":
		return fail(2, "--nats URL (or $%s) is required", natsflags.EnvURL)
	case *threads < 1:
		return fail(2, "--threads: %d < 1", *threads)
	}
	if err := transport.ValidName(*name); err != nil {
		return fail(2, "--name %q: %v", *name, err)
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	con.Start(cli.Options{Level: level, Quiet: true})
	log := con.Logger().With("worker", *name)
	var m *metrics.Metrics // nil without --metrics: its methods do nothing
	wo.Name, wo.Threads, wo.Logger = *name, *threads, log
	if *metricsAddr != "" {
		var stop func()
		var err error
		if m, stop, err = natsflags.StartMetrics(ctx, *metricsAddr, metrics.Worker, con.Print); err != nil {
			var fe *natsflags.FlagError
			if errors.As(err, &fe) {
				return fail(2, "%v", err)
			}
			return fail(1, "%v", err)
		}
		defer stop()
		wo.OnStep, wo.OnParts = m.ObserveWorkerStep, m.SetParts
	}
	// A worker outlives NATS restarts: it reconnects for as long as it runs.
	opts := nf.Options(nf.URL, *name)
	opts.MaxReconnects = -1
	tr, err := nf.Connect(ctx, opts, log)
	if err != nil {
		return fail(2, "%s", nf.Redact(err.Error()))
	}
	defer tr.Close()
	natsflags.Observe(m, tr)
	sealed, unseal, err := key.Wrap(tr, log)
	if err != nil {
		return fail(2, "%s", nf.Redact(err.Error()))
	}
	defer unseal()
	log.Info("connected", "nats", nf.Redact(nf.URL), "threads", *threads)
	// Dual decomposition's parts and, on the same transport, the subtrees
	// of distributed branch and bound (run --exact).
	err = launch.ServeWorker(ctx, sealed, wo)
	if err != nil {
		return fail(1, "%s", nf.Redact(err.Error()))
	}
	log.Info("stopped")
	return 0
}
