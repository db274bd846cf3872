package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/consensus"
)

// checkpointFlags are `coordinator run`'s checkpoint settings.
type checkpointFlags struct {
	every    int
	interval time.Duration
	dir      string
	resume   bool
}

func (c *checkpointFlags) register(fs interface {
	IntVar(*int, string, int, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.IntVar(&c.every, "checkpoint-every", 0, "take a checkpoint every `N` iterations (0: not by count)")
	fs.DurationVar(&c.interval, "checkpoint-interval", 30*time.Second, "take a checkpoint when this much time passed since the last (0: not by time)")
	fs.StringVar(&c.dir, "checkpoint-dir", "", "keep checkpoints in `DIR` (without it, and without Raft, they live only in the coordinator's memory, for restarting lost workers' parts)")
	fs.BoolVar(&c.resume, "resume", false, "continue the job (--job) from its latest checkpoint in --checkpoint-dir")
}

func (c *checkpointFlags) check() error {
	switch {
	case c.every < 0:
		return usagef("--checkpoint-every: %d < 0", c.every)
	case c.interval < 0:
		return usagef("--checkpoint-interval: %v is negative", c.interval)
	}
	return nil
}

// jobIdentity is what a checkpoint may be resumed with: sum, the sha256
// of the model file and the evidence file (see solveFlags.load), and the
// settings that change the iterates.
func jobIdentity(sum []byte, opts consensus.Options, workers int) (string, json.RawMessage, error) {
	settings, err := json.Marshal(struct {
		Algo        consensus.Algo          `json:"algo"`
		Slaves      consensus.Decomposition `json:"slaves"`
		Step        consensus.StepRule      `json:"step"`
		Eta         float64                 `json:"eta"`
		AdaptEta    bool                    `json:"adapt_eta"`
		Tau         float64                 `json:"tau"`
		Tol         float64                 `json:"tol"`
		ResidualTol float64                 `json:"residual_tol"`
		MaxIter     int                     `json:"max_iter"`
		Workers     int                     `json:"workers"`
	}{opts.Algo, opts.Slaves, opts.Step, opts.Eta, opts.AdaptEta, opts.Tau, opts.Tol, opts.ResidualTol, opts.MaxIter, workers})
	if err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(sum), settings, nil
}

// resumePoint is where a job continues from.
type resumePoint struct {
	resume            *cluster.Resume
	epoch             uint64 // the epoch of the manifest resumed
	redone, failovers int    // from the manifest's meta
}

// loadResume reads and verifies the checkpoint m from store and checks
// that it belongs to this model and these settings.
func loadResume(ctx context.Context, store checkpoint.Store, candidates []checkpoint.Manifest, modelHash string, settings json.RawMessage, log *slog.Logger) (*resumePoint, error) {
	m, blobs, skipped, err := checkpoint.Latest(ctx, store, candidates)
	for _, s := range skipped {
		log.Warn("torn checkpoint skipped", "err", s)
	}
	if err != nil {
		return nil, err
	}
	var meta cluster.CheckpointMeta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		return nil, fmt.Errorf("checkpoint of iteration %d: meta: %w", m.Iteration, err)
	}
	if meta.ModelHash != modelHash {
		return nil, usagef("the checkpoint of job %s was taken on another model or evidence file (sha256 %.12s, this one %.12s)", m.Job, meta.ModelHash, modelHash)
	}
	if !bytes.Equal(meta.Settings, settings) {
		return nil, usagef("the checkpoint of job %s was taken with other settings: %s; now: %s", m.Job, meta.Settings, settings)
	}
	st, where, err := cluster.DecodeState(blobs)
	if err != nil {
		return nil, err
	}
	log.Info("resuming from checkpoint", "job", m.Job, "iteration", m.Iteration, "epoch", m.Epoch, "taken", m.Created.Format(time.RFC3339))
	return &resumePoint{resume: &cluster.Resume{State: st, Where: where}, epoch: m.Epoch, redone: meta.Redone, failovers: meta.Failovers}, nil
}

// localCheckpoints sets up a single coordinator's checkpoints in dir: the
// blobs and the manifests of the job there. It refuses to start a job over
// existing checkpoints without --resume.
func localCheckpoints(ctx context.Context, c checkpointFlags, job, modelHash string, settings json.RawMessage, log *slog.Logger) (*checkpoint.Dir, *resumePoint, error) {
	d, err := checkpoint.OpenDir(c.dir)
	if err != nil {
		return nil, nil, usagef("--checkpoint-dir: %v", err)
	}
	ms, err := d.Manifests(job)
	if err != nil {
		return nil, nil, fmt.Errorf("--checkpoint-dir %s: %w", c.dir, err)
	}
	if !c.resume {
		if len(ms) > 0 {
			return nil, nil, usagef("--checkpoint-dir %s holds checkpoints of job %s (the latest of iteration %d): pass --resume to continue it, or choose another --job", c.dir, job, ms[0].Iteration)
		}
		return d, nil, nil
	}
	if len(ms) == 0 {
		return nil, nil, usagef("--resume: no checkpoint of job %s in %s", job, c.dir)
	}
	rp, err := loadResume(ctx, d, ms, modelHash, settings, log)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	return d, rp, err
}
