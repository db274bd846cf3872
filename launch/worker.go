package launch

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ddrun/ddrun/cluster"
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
	// StateDir is the only directory the worker writes to: its sharded
	// parts' state files (the directory every worker of a sharded job
	// sees). ModelRoots are the directories, besides StateDir, whose model
	// files a sharded part's spec may name. Without StateDir the worker
	// takes no sharded parts (shard.Dirs).
	StateDir   string
	ModelRoots []string
}

// RegisterDirs registers the worker's directories for sharded parts on fs:
// --state-dir (StateDir) and --model-root (ModelRoots; repeated, or a
// list separated as $PATH is).
func (w *Worker) RegisterDirs(fs *flag.FlagSet) {
	fs.StringVar(&w.StateDir, "state-dir", "", "the only `DIR` this worker writes to: sharded parts' state files (the directory every worker of a sharded job sees; created when missing). Without it the worker takes no sharded parts")
	fs.Func("model-root", "a `DIR` (besides --state-dir) whose model files a sharded part may name; repeat it or separate directories as in $PATH", func(v string) error {
		for _, d := range filepath.SplitList(v) {
			if d == "" {
				return errors.New("an empty directory")
			}
			w.ModelRoots = append(w.ModelRoots, d)
		}
		return nil
	})
}

// ServeWorker serves w on tr until ctx ends: dual decomposition's parts
// (cluster.Serve; sharded parts read by shard.Dirs.LoadSpec from the
// model roots and their states saved as shard.StateFiles in StateDir)
// and, beside them on the same transport, the
// subtrees of distributed branch and bound (dsearch.Serve) and the parts
// of distributed TRW-S (remote.Serve). It returns the first of their
// errors.
func ServeWorker(ctx context.Context, tr transport.Transport, w Worker) error {
	dirs, err := shard.NewDirs(w.StateDir, w.ModelRoots)
	if err != nil {
		return err
	}
	wo := cluster.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger, LoadShard: dirs.LoadSpec,
		OnStep: w.OnStep, OnParts: w.OnParts}
	if dirs.State != "" {
		wo.ShardStates = shard.StateFiles{Dir: dirs.State}
	}
	sctx, stopSearch := context.WithCancel(ctx)
	searchDone, trwsDone := make(chan error, 1), make(chan error, 1)
	go func() {
		searchDone <- dsearch.Serve(sctx, tr, dsearch.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger})
	}()
	go func() {
		trwsDone <- remote.Serve(sctx, tr, remote.WorkerOptions{Name: w.Name, Logger: w.Logger, Files: dirs})
	}()
	err = cluster.Serve(ctx, tr, wo)
	stopSearch()
	for _, done := range []chan error{searchDone, trwsDone} {
		if serr := <-done; err == nil {
			err = serr
		}
	}
	return err
}
