package launch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/modelfile"
)

// This file decides what a distributed run's model becomes: every run on
// workers is sharded (the coordinator keeps the boundary, the workers read
// their parts of an indexed file), its input converted to that file when
// it is not one, except for what the sharded path cannot do yet
// (WholeReason) and models it cannot take (runWhole).

// WholeReason says why job j on modelPath (evidence: with an evidence
// file given, which a sharded run folds into the model it converts) runs on
// workers with the whole model on the coordinator instead of sharded, or
// "" when it runs sharded: the sharded path has one slave per factor, no
// tightening (cycle pursuit regroups the whole model in one process), and
// takes no evidence with an indexed model; the other algorithms are not
// dual decomposition. The anytime phases run sharded: the relaxation on
// the parts, the search with each worker reading the whole file
// (runShardedAnytime; with --time-limit alone, without the search:
// Target.NoSearch). --exact runs sharded, whatever its node solver,
// unless tightened or with evidence on an indexed model: its workers read
// the whole model from the converted file (runSearchFile).
func WholeReason(j *engine.Job, modelPath string, evidence bool) string {
	s := &j.Settings
	indexedEvidence := evidence && modelfile.FormatOf(modelPath) == modelfile.Indexed
	switch {
	case s.Exact && s.Tighten == "none" && !indexedEvidence:
		return "" // whatever the node solver: the workers read the whole model
	case !j.Algorithm.Distributed && j.Algorithm.Name != "trws":
		return fmt.Sprintf("--algo %s is not dual decomposition", j.Algorithm.Name)
	case s.Tighten != "none":
		return fmt.Sprintf("--tighten %s needs the whole model: it regroups it", s.Tighten)
	case j.Algorithm.Distributed && j.DD().Slaves != consensus.PerFactor:
		return fmt.Sprintf("--slaves %s: a sharded run has one slave per factor", j.DD().Slaves)
	case indexedEvidence:
		return "--evidence with an indexed model (.ddx): fold it into the model first, or give the model in another format (its conversion folds the evidence in)"
	}
	return ""
}

// shardInput is the indexed model file the workers of a sharded run read:
// path itself when it is one, else path converted to stateDir/NAME.ddx
// (NAME: path's base name, extensions included) by modelfile.Convert,
// which streams UAI (plain, gzip, xz, .LG) and native msgpack in memory
// that does not grow with the model (native JSON and WCSP are read whole
// for the conversion, and freed before the run). maxEntries bounds what
// the conversion holds: when it streams, each cardinality and table, not
// the totals, which the plan and the workers then check part by part, as
// for an indexed input (modelfile.ConvertOptions.MaxEntries). The file is
// written beside its place and renamed into it, so that members of a Raft
// group converting the same model into a shared directory each leave the
// same complete file. report is told what the conversion writes
// (modelfile.ConvertOptions.Report): the plan's first pass, which then
// need not read back the file this run has just written (shard.Summary).
func shardInput(ctx context.Context, path, stateDir string, maxEntries int, evidence string, observed func(model.Evidence), report indexed.WriteReport, log *slog.Logger) (string, error) {
	if modelfile.FormatOf(path) == modelfile.Indexed {
		if evidence != "" {
			return "", inputf("%s: an indexed model takes no evidence (fold it into the model first)", path)
		}
		return path, nil
	}
	if modelfile.FormatOf(path) == modelfile.Unknown {
		return "", inputf("%s: unknown model format", path)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return "", inputf("--state-dir: %v", err)
	}
	name := filepath.Base(path) // the whole name: m.uai and m.json sharing a --state-dir convert apart
	if evidence != "" {
		// Another evidence file is another model.
		b, err := os.ReadFile(evidence)
		if err != nil {
			return "", inputf("--evidence: %v", err)
		}
		name += fmt.Sprintf(".evid-%x", sha256.Sum256(b))[:18]
	}
	out := filepath.Join(stateDir, name+indexed.Ext)
	start := time.Now()
	if err := writeRenamed(out, func(tmp string) error {
		return modelfile.Convert(ctx, path, tmp, modelfile.ConvertOptions{MaxEntries: maxEntries, Evidence: evidence, Observed: observed, Report: report})
	}); err != nil {
		return "", err
	}
	log.Info("sharding: model converted", "from", path, "to", out, "seconds", time.Since(start).Seconds())
	return out, nil
}

// writeRenamed has write fill a temporary file beside out (its error is
// the input's) and renames it into place, so that members of a Raft group
// writing the same file into a shared directory each leave the same
// complete file, and none sees another's half-written one.
func writeRenamed(out string, write func(tmp string) error) error {
	ext := filepath.Ext(out) // the writers choose the format by it
	f, err := os.CreateTemp(filepath.Dir(out), "."+strings.TrimSuffix(filepath.Base(out), ext)+"-*"+ext)
	if err != nil {
		return inputf("--state-dir: %v", err)
	}
	f.Close()
	defer os.Remove(f.Name())
	if err := write(f.Name()); err != nil {
		return &InputError{err}
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	return nil
}

// runWhole runs j on the whole model after its sharded plan refused the
// model (why: a forbidden state, a factor that stayed over one variable,
// fewer factors than workers): the coordinator reads it (Load, with
// Sharded.Fallback's input) and runs the job as runJob does.
func runWhole(ctx context.Context, j *engine.Job, t Target, h Hooks, why error) (Outcome, error) {
	t.Logger.Warn("the model cannot be sharded: the coordinator holds it whole", "why", why.Error())
	in := *t.Sharded.Fallback
	if in.Evidence == "" {
		in.Evidence = EvidenceBeside(in.Path) // as the sharded plan read it
	}
	hash := sha256.New() // the job's identity, as the front end hashes a whole model's files
	in.Tee, in.Start = hash, t.Start
	if err := Load(ctx, j, in); err != nil {
		return Outcome{}, err
	}
	t.Hash, t.Sharded = hash.Sum(nil), nil
	if err := t.CheckMode(j, "run"); err != nil {
		return Outcome{}, err
	}
	return runJob(ctx, j, t, h)
}
