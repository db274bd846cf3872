package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
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
	// StateDir is the only directory the worker writes to: the parts it
	// receives (Parts) and its sharded parts' state files (for
	// checkpoints that outlive a worker, a directory every worker of the
	// job sees); "": DefaultWorkerDir(). ModelRoots are the directories,
	// besides StateDir, whose model files a sharded part's spec may name
	// (shard.Dirs); a part whose file lies elsewhere is received.
	StateDir   string
	ModelRoots []string
}

// RegisterDirs registers the worker's directories for sharded parts on fs:
// --state-dir (StateDir) and --model-root (ModelRoots; repeated, or a
// list separated as $PATH is).
func (w *Worker) RegisterDirs(fs *flag.FlagSet) {
	fs.StringVar(&w.StateDir, "state-dir", "", "the only `DIR` this worker writes to: the sharded parts it receives (coordinator run --parts) and their state files (for checkpoints a spare can take over, a directory every worker sees; created when missing; default: ddrun-parts-UID in the temporary directory)")
	fs.Func("model-root", "a `DIR` (besides --state-dir) whose model files a sharded part may be read from; a part whose file lies elsewhere is received from the coordinator. Repeat it or separate directories as in $PATH", func(v string) error {
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
// (cluster.Serve; sharded parts read by shard.LoadFlat from the model file
// where shard.Dirs allow it, or received over tr (Parts), and their states
// saved as shard.StateFiles in StateDir) and, beside them on the same
// transport, the
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
		if err := privateDir(w.StateDir); err != nil {
			return err
		}
	}
	dirs, err := shard.NewDirs(w.StateDir, w.ModelRoots)
	if err != nil {
		return err
	}
	parts := &partReceiver{tr: tr, name: w.Name, dirs: dirs, log: log}
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
	wo := cluster.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger, LoadShard: load, ShardStates: shard.StateFiles{Dir: dirs.State},
		OnStep: w.OnStep, OnParts: w.OnParts}
	sctx, stopSearch := context.WithCancel(ctx)
	searchDone, trwsDone := make(chan error, 1), make(chan error, 1)
	go func() {
		searchDone <- dsearch.Serve(sctx, tr, dsearch.WorkerOptions{Name: w.Name, Threads: w.Threads, Logger: w.Logger, ModelPath: dirs.ModelPath})
	}()
	go func() {
		trwsDone <- remote.Serve(sctx, tr, remote.WorkerOptions{Name: w.Name, Logger: w.Logger, Files: dirs, Receive: parts.receive})
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

// DefaultWorkerDir is a worker's state directory when none is given: one
// per user in the system's temporary directory (a received part's file
// has a name of its own there, and is removed once the part is loaded).
func DefaultWorkerDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("ddrun-parts-%d", os.Getuid()))
}

// privateDir makes dir, in a directory others may write to (the system's
// temporary one), this user's own: created with mode 0700 when missing,
// and refused when it is a link, not a directory, another user's, or open
// to others (someone else made it first, to redirect or read what the
// worker writes there).
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("worker: the default state directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("worker: the default state directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("worker: the default state directory %s is not this user's private directory (a link, another user's, or open to others): remove it or give --state-dir", dir)
	}
	return nil
}
