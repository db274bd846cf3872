package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
)

// Input is where a job's model comes from: the model file at Path and the
// evidence file at Evidence ("": none), read with at most MaxEntries table
// entries (0: model.DefaultMaxEntries). Fold reads a UAI file's unary
// tables straight into the unaries (for a model this process owns). Tee,
// when not nil, gets the model file's bytes, a 0 byte, and those of the
// evidence file followed by a 0 byte when there is one (a distributed
// job's identity). Start is when the time limit started (zero: now).
type Input struct {
	Path, Evidence string
	MaxEntries     int
	Fold           bool
	Tee            io.Writer
	Start          time.Time
	// Note, when not nil, turns on what toulbar2 users expect and is told
	// of it: a UAI model's evidence file beside it (FILE.evid,
	// EvidenceBeside) is read when Evidence is "".
	Note func(key, text string, kv ...any)
}

// loading, when not nil (tests), is told of every whole model Load reads:
// a sharded run's coordinator must read none.
var loading func(path string)

// EvidenceBeside returns the evidence file that toulbar2 reads with a UAI
// model FILE when it is given none: FILE.evid (for FILE.uai.gz or
// FILE.uai.xz also FILE.uai.evid), when it is a regular file; "" otherwise.
func EvidenceBeside(path string) string {
	if modelfile.FormatOf(path) != modelfile.UAI {
		return ""
	}
	lower := strings.ToLower(path)
	for _, p := range []string{path + ".evid", path[:len(strings.TrimSuffix(strings.TrimSuffix(lower, ".gz"), ".xz"))] + ".evid"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Load reads j's model and evidence under ctx and within j's time limit
// counted from in.Start (a signal or the time limit stops it with an
// *InputError), gives the algorithm the time that is left, and binds j to
// the model (engine's Job.Bind: the choice by model class, the
// tightening, the anytime options).
func Load(ctx context.Context, j *engine.Job, in Input) error {
	if loading != nil {
		loading(in.Path)
	}
	if in.Start.IsZero() {
		in.Start = time.Now()
	}
	if in.MaxEntries == 0 {
		in.MaxEntries = model.DefaultMaxEntries
	}
	timeLimit := j.Settings.TimeLimit
	lctx := ctx
	if timeLimit > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, in.Start.Add(timeLimit), fmt.Errorf("--time-limit %v reached while loading", timeLimit))
		defer cancel()
	}
	// Cost: --json's cost, what toulbar2 prints as the optimum, for its
	// .wcsp and .cfn files.
	opts := modelfile.Options{MaxEntries: in.MaxEntries, Tee: in.Tee, Cost: &j.Cost}
	if in.Fold {
		// The process owns the model it reads: a UAI file's unary tables
		// go straight into the unaries (what every algorithm's Reduce
		// would do), so that they take no factor of their own in memory.
		opts.FoldUnary, opts.Folded = true, &j.Folded
	}
	h := in.Tee
	m, err := modelfile.LoadWith(lctx, in.Path, opts)
	if err == nil && h != nil {
		_, err = h.Write([]byte{0})
	}
	if err != nil {
		return &InputError{err}
	}
	if in.Evidence == "" && in.Note != nil {
		if in.Evidence = EvidenceBeside(in.Path); in.Evidence != "" {
			in.Note("evidence", fmt.Sprintf("evidence: %s, read as toulbar2 does (found beside the model; --evidence overrides)", in.Evidence), "evidence", in.Evidence)
		}
	}
	var ev model.Evidence
	if in.Evidence != "" {
		if ev, err = modelfile.LoadEvidenceWith(lctx, in.Evidence, m, h); err == nil && h != nil {
			_, err = h.Write([]byte{0})
		}
		if err != nil {
			return &InputError{err}
		}
	}
	if timeLimit > 0 {
		// The time limit counts from the start: the algorithm gets what
		// loading left.
		left := timeLimit - time.Since(in.Start)
		if left <= 0 {
			return inputf("%s: --time-limit %v reached while loading", in.Path, timeLimit)
		}
		j.Settings.TimeLimit = left
	}
	if err := j.Bind(m, ev); err != nil {
		var me *engine.ModelError
		if errors.As(err, &me) {
			return inputf("%s: %w", in.Path, me.Err)
		}
		return err
	}
	return nil
}
