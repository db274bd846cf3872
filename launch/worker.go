package launch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/dtrws/remote"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// Worker is a worker process's side of every distributed mode (cmd/worker).
type Worker struct {
	// Name is the worker's name, unique among the workers; Threads its
	// goroutines; Logger gets its log.
	Name    string
	Threads int
	Logger  *slog.Logger
	// OnStep and OnParts, when not nil, are told of every dual
	// decomposition step computed (it took d) and of the parts held
	// (cluster.WorkerOptions).
	OnStep  func(d time.Duration)
	OnParts func(n int)
	// StateDir is this worker's own directory, where it receives the
	// part of a sharded run whose file it cannot read (Parts); "":
	// DefaultWorkerDir().
	StateDir string
}

// ServeWorker serves w on tr until ctx ends: dual decomposition's parts
// (cluster.Serve; sharded parts read by shard.LoadFlat, from the model
// file or received over tr (Parts), and their states saved as
// shard.StateFiles) and, beside them on the same transport, the
// subtrees of distributed branch and bound (dsearch.Serve) and the parts
// of distributed TRW-S (remote.Serve). It returns the first of their
// errors.
func ServeWorker(ctx context.Context, tr transport.Transport, w Worker) error {
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if w.StateDir == "" {
		w.StateDir = DefaultWorkerDir()
	}
	parts := &partReceiver{tr: tr, name: w.Name, stateDir: w.StateDir, log: log}
	load := func(ctx context.Context, b []byte) (*consensus.Part, error) {
		spec, err := shard.DecodeSpec(b)
		if err != nil {
			return nil, err
		}
		done, err := parts.receive(ctx, spec)
		if err != nil {
			return nil, err
		}
		defer done()
		return shard.LoadFlat(ctx, spec)
	}
	wo := cluster.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger, LoadShard: load, ShardStates: shard.StateFiles{},
		OnStep: w.OnStep, OnParts: w.OnParts}
	sctx, stopSearch := context.WithCancel(ctx)
	searchDone, trwsDone := make(chan error, 1), make(chan error, 1)
	go func() {
		searchDone <- dsearch.Serve(sctx, tr, dsearch.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger})
	}()
	go func() {
		trwsDone <- remote.Serve(sctx, tr, remote.WorkerOptions{Name: w.Name, Logger: w.Logger, Receive: parts.receive})
	}()
	err := cluster.Serve(ctx, tr, wo)
	stopSearch()
	for _, done := range []chan error{searchDone, trwsDone} {
		if serr := <-done; err == nil {
			err = serr
		}
	}
	return err
}

// DefaultWorkerDir is a worker's state directory when none is given: one
// per user in the system's temporary directory (a received part's file
// has a name of its own there, and is removed once the part is loaded).
func DefaultWorkerDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("ddrun-parts-%d", os.Getuid()))
}
