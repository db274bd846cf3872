// Command worker is a ddrun worker process: it connects to a NATS server,
// announces itself, and solves the slaves that coordinators assign it, job
// after job, until it is stopped (SIGINT or SIGTERM).
//
//	worker --nats URL [--threads N] [--name NAME] [NATS credential flags] [--job-key-file F]
//	       [--connect-timeout D] [--metrics ADDR]
//
// It keeps trying to reach the NATS server for --connect-timeout (default
// 30s: in Kubernetes it may start before NATS), and once connected it
// reconnects after any loss of the connection for as long as it runs,
// logging the loss and the return. --metrics serves its Prometheus series,
// /healthz and /readyz (ready while connected).
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

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/natsflags"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: worker --nats URL [--threads N] [--name NAME]\nsecrets: --nats-password-file/--nats-token-file, or $"+natsflags.EnvPassword+"/$"+natsflags.EnvToken+" (flags show in ps)")
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	if err := nf.Resolve(); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "worker: unexpected argument %q\n", fs.Arg(0))
		return 2
	case nf.URL == "":
		fmt.Fprintln(stderr, "worker: --nats URL (or $"+natsflags.EnvURL+") is required")
		return 2
	case *threads < 1:
		fmt.Fprintf(stderr, "worker: --threads: %d < 1\n", *threads)
		return 2
	}
	if err := transport.ValidName(*name); err != nil {
		fmt.Fprintf(stderr, "worker: --name %q: %v\n", *name, err)
		return 2
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("worker", *name)
	var m *metrics.Metrics // nil without --metrics: its methods do nothing
	wo := cluster.WorkerOptions{Name: *name, Threads: *threads, Logger: log, LoadShard: loadShard}
	if *metricsAddr != "" {
		var err error
		if m, err = metrics.New(metrics.Options{Role: metrics.Worker}); err != nil {
			fmt.Fprintln(stderr, "worker:", err)
			return 1
		}
		srv, err := m.Start(ctx, *metricsAddr, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "worker: --metrics:", err)
			return 2
		}
		defer srv.Close()
		m.SetReady(false, "connecting to NATS")
		wo.OnStep, wo.OnParts = m.ObserveWorkerStep, m.SetParts
	}
	// A worker outlives NATS restarts: it reconnects for as long as it runs.
	opts := nf.Options(nf.URL, *name)
	opts.MaxReconnects = -1
	tr, err := nf.Connect(ctx, opts, log)
	if err != nil {
		fmt.Fprintln(stderr, "worker:", nf.Redact(err.Error()))
		return 2
	}
	defer tr.Close()
	natsflags.Observe(m, tr)
	sealed, unseal, err := key.Wrap(tr, log)
	if err != nil {
		fmt.Fprintln(stderr, "worker:", nf.Redact(err.Error()))
		return 2
	}
	defer unseal()
	log.Info("connected", "nats", nf.Redact(nf.URL), "threads", *threads)
	if err := cluster.Serve(ctx, sealed, wo); err != nil {
		fmt.Fprintln(stderr, "worker:", nf.Redact(err.Error()))
		return 1
	}
	log.Info("stopped")
	return 0
}

// loadShard builds a sharded job's part from its spec: this worker's
// factors, read from the model file by byte ranges.
func loadShard(ctx context.Context, spec []byte) (*consensus.Part, error) {
	sp, err := shard.DecodeSpec(spec)
	if err != nil {
		return nil, err
	}
	return shard.Load(ctx, sp)
}
