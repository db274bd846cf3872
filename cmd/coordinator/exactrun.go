package main

import ()

// checkExact rejects the flags of run that distributed branch and bound
// does not take: it keeps no checkpoints, runs on one coordinator and
// holds the whole model.
func (r *runFlags) checkExact() error {
	switch {
	case r.sharded:
		return usagef("run: --exact and --sharded: branch and bound ships the whole model to every worker")
	case r.raft.enabled():
		return usagef("run: --exact runs on one coordinator (no --raft)")
	case r.ck.dir != "" || r.ck.resume:
		return usagef("run: --exact keeps no checkpoints (--checkpoint-dir, --resume)")
	}
	return nil
}
