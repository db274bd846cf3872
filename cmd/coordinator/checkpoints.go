package main

import (
	"flag"
	"time"

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
