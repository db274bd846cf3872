package main

import (
	"path/filepath"
	"strings"

	"github.com/ddrun/ddrun/consensus"
)

// shardedFlags rejects what a sharded run cannot do.
func shardedFlags(f solveFlags, r runFlags, sp spec, model string) error {
	switch {
	case sp.Distributable("run") != nil:
		return settingError(sp.Distributable("run"))
	case sp.DD().Slaves != consensus.PerFactor:
		return usagef("run --sharded: --slaves %s: a sharded run has one slave per factor", sp.DD().Slaves)
	case f.evidence != "":
		return usagef("run --sharded: --evidence is not applied to sharded models (fold it into the model first)")
	case sp.Settings.Tighten != "none":
		return usagef("run --sharded: --tighten %s needs the whole model", sp.Settings.Tighten)
	case r.raft.enabled():
		return usagef("run --sharded: a sharded run has one coordinator (no --raft-*)")
	case !strings.HasSuffix(strings.ToLower(model), ".ddx"):
		return usagef("run --sharded: %s: the workers read an indexed model (.ddx) at the same path; convert it first: coordinator convert %s %s.ddx",
			model, model, strings.TrimSuffix(model, filepath.Ext(model)))
	}
	return nil
}
