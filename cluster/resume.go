package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/consensus"
)

// ResumePoint is where a job continues from: a checkpoint's state, its
// placement, and what its manifest says about the epochs before it. A run
// (RunOptions.Resume) reads State and Where; RunJob (Job.Resume) the rest
// too.
type ResumePoint struct {
	State *consensus.State
	// Where is the worker of each slave, as recorded with the state (nil
	// in a sharded job's: its State.Refs name its parts' states).
	Where []int32
	Epoch uint64 // the epoch of the manifest resumed
	// Redone, Failovers and Started, from the manifest's CheckpointMeta.
	Redone, Failovers int
	Started           time.Time
}

// RefusedError is a job refused for what it was given, not for a failure:
// a checkpoint of another model or other settings, or a Raft group that
// runs another job. A command reports it as a usage error.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

func refusedf(format string, a ...any) error { return &RefusedError{fmt.Errorf(format, a...)} }

// LoadResume reads and verifies the latest valid checkpoint among
// candidates (newest first, see checkpoint.Latest) from store, and checks
// that it belongs to id: another model or other settings is a
// *RefusedError. With no valid candidate the error wraps
// checkpoint.ErrNoCheckpoint.
func LoadResume(ctx context.Context, store checkpoint.Store, candidates []checkpoint.Manifest, id Identity, log *slog.Logger) (*ResumePoint, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, blobs, skipped, err := checkpoint.Latest(ctx, store, candidates)
	for _, s := range skipped {
		log.Warn("torn checkpoint skipped", "err", s)
	}
	if err != nil {
		return nil, err
	}
	var meta CheckpointMeta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		return nil, fmt.Errorf("checkpoint of iteration %d: meta: %w", m.Iteration, err)
	}
	if meta.ModelHash != id.ModelHash {
		return nil, refusedf("the checkpoint of job %s was taken on another model or evidence file (sha256 %.12s, this one %.12s)", m.Job, meta.ModelHash, id.ModelHash)
	}
	if !bytes.Equal(meta.Settings, id.Settings) {
		return nil, refusedf("the checkpoint of job %s was taken with other settings: %s; now: %s", m.Job, meta.Settings, id.Settings)
	}
	st, where, err := DecodeState(blobs)
	if err != nil {
		return nil, err
	}
	log.Info("resuming from checkpoint", "job", m.Job, "iteration", m.Iteration, "epoch", m.Epoch, "taken", m.Created.Format(time.RFC3339))
	return &ResumePoint{State: st, Where: where, Epoch: m.Epoch, Redone: meta.Redone, Failovers: meta.Failovers, Started: meta.Started}, nil
}
