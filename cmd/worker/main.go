// Command worker is a ddrun worker process: it connects to a NATS server,
// announces itself, and solves the slaves that coordinators assign it, job
// after job, until it is stopped (SIGINT or SIGTERM).
//
//	worker --nats URL [--threads N] [--name NAME] [--log-format text|json] [NATS credential flags] [--job-key-file F]
//	worker version
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

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/internal/natsflags"
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
	var key natsflags.JobKey
	key.Register(fs)
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "goroutines for this worker's slaves")
	host, _ := os.Hostname()
	name := fs.String("name", transport.SanitizeName(fmt.Sprintf("%s-%d", host, os.Getpid())), "worker `NAME`, unique among the workers ([A-Za-z0-9_-])")
	quiet := fs.Bool("quiet", false, "log only warnings and errors")
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
	tr, err := transport.NewNATS(ctx, nf.Options(nf.URL, *name))
	if err != nil {
		return fail(2, "%s", nf.Redact(err.Error()))
	}
	defer tr.Close()
	sealed, unseal, err := key.Wrap(tr, log)
	if err != nil {
		return fail(2, "%s", nf.Redact(err.Error()))
	}
	defer unseal()
	log.Info("connected", "nats", nf.Redact(nf.URL), "threads", *threads)
	if err := cluster.Serve(ctx, sealed, cluster.WorkerOptions{Name: *name, Threads: *threads, Logger: log, LoadShard: loadShard}); err != nil {
		return fail(1, "%s", nf.Redact(err.Error()))
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
