package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/internal/cli"
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
	Var(flag.Value, string, string)
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.IntVar(&c.every, "checkpoint-every", 0, "take a checkpoint every `N` iterations (0: not by count)")
	fs.Var(cli.Duration(&c.interval, 30*time.Second), "checkpoint-interval", "take a checkpoint when this much time passed since the last (0: not by time)")
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

// localCheckpoints opens a single coordinator's checkpoint directory and
// finds where the job continues from: nowhere without --resume, which it
// refuses over existing checkpoints of the job; the latest valid
// checkpoint with it.
func localCheckpoints(ctx context.Context, c checkpointFlags, job string, id cluster.Identity, log *slog.Logger) (*checkpoint.Dir, *cluster.ResumePoint, error) {
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
	rp, err := cluster.LoadResume(ctx, d, ms, id, log)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	return d, rp, usageIfRefused(err)
}

// usageIfRefused makes a job that cluster refused for its input (another
// model, other settings, another job) a usage error.
func usageIfRefused(err error) error {
	var re *cluster.RefusedError
	if errors.As(err, &re) {
		return usageError{err}
	}
	return err
}
