package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/learn"
	"github.com/ddrun/ddrun/trace"
)

// cmdGenLearn is `coordinator gen sequence|multilabel`: planted training
// and test data and the planted weights, written to a directory.
func cmdGenLearn(family string, args []string, stdout io.Writer, con *cli.Console) error {
	fs := flagSet("gen " + family)
	out := fs.String("o", "", "output `DIR` (created): train.*, test.*, planted.weights, README")
	seed := fs.Int64("seed", 1, "random seed")
	labels := fs.Int("labels", 10, "number of labels")
	features := fs.Int("features", 0, "number of features (0: max(100, 4*labels))")
	train := fs.Int("train", 100, "training sentences / examples")
	test := fs.Int("test", 100, "test sentences / examples")
	labelFeat := fs.Int("label-features", 4, "features owned by each label")
	noise := fs.Float64("noise", 0.1, "probability that a drawn feature is uniform instead of the label's own")
	emission := fs.Float64("emission", 2, "emission strength: the planted weight of a label's own feature")
	var seq learn.SeqGenOptions
	var ml learn.MLGenOptions
	if family == "sequence" {
		fs.IntVar(&seq.MinLen, "min-len", 5, "shortest sentence")
		fs.IntVar(&seq.MaxLen, "max-len", 20, "longest sentence")
		fs.IntVar(&seq.TokenFeatures, "token-features", 3, "features drawn per token")
		fs.Float64Var(&seq.Transition, "transition", 1, "transition strength: logits ~ transition * N(0,1)")
	} else {
		fs.IntVar(&ml.ExampleFeatures, "example-features", 3, "features drawn per positive label")
		fs.Float64Var(&ml.MeanLabels, "mean-labels", 3, "mean number of positive labels per example")
		fs.Float64Var(&ml.Interaction, "interaction", 1, "planted pair weight of a label and its partner")
	}
	pos, _, err := parseQuiet(fs, args, con)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("gen %s: unexpected argument %q", family, pos[0])
	}
	if *out == "" {
		return usagef("gen %s: -o DIR is required", family)
	}
	var set *learn.PlantedSet
	if family == "sequence" {
		seq.Labels, seq.Features, seq.Train, seq.Test, seq.Seed = *labels, *features, *train, *test, *seed
		seq.LabelFeatures, seq.Noise, seq.Emission = *labelFeat, *noise, *emission
		set, err = learn.PlantSequence(seq)
	} else {
		ml.Labels, ml.Features, ml.Train, ml.Test, ml.Seed = *labels, *features, *train, *test, *seed
		ml.LabelFeatures, ml.Noise, ml.Emission = *labelFeat, *noise, *emission
		set, err = learn.PlantMultilabel(ml)
	}
	if err != nil {
		return usagef("%v", err)
	}
	if err := set.Write(*out); err != nil {
		return fmt.Errorf("gen %s: %w", family, err)
	}
	con.Logger().Info("wrote planted data", "dir", *out, "family", family)
	return nil
}

// cmdTrain is `coordinator train`.
func cmdTrain(ctx context.Context, args []string, stdout io.Writer, con *cli.Console) error {
	fs := flagSet("train")
	algo := fs.String("algo", "gdmm", "training algorithm: "+learn.AlgorithmNames())
	data := fs.String("data", "", "training data `FILE` (.conll sequences or .svm multilabel; see docs/learning.md)")
	out := fs.String("o", "", "write the trained weights to `FILE`")
	var o learn.Options
	fs.Float64Var(&o.C, "c", 1, "loss weight C of the structural SVM primal 1/2||w||^2 + C sum_i hinge_i")
	fs.Var(cli.Duration(&o.TimeLimit, 0), "time-limit", "time limit, e.g. 30s or 5m, or a number of seconds (0: none)")
	fs.IntVar(&o.MaxIter, "max-iter", 0, "passes over the data (0: none; default 50 when neither --time-limit nor --tol is set)")
	fs.Float64Var(&o.Tol, "tol", 0, "stop when primal - dual <= tol * max(1, primal) (0: never)")
	fs.IntVar(&o.Threads, "threads", 0, "goroutines for the objective evaluation, BCFW/SSG mini-batches and GDMM's two-stage pass (0: all cores)")
	fs.Int64Var(&o.Seed, "seed", 1, "random seed (sampling, example order)")
	fs.IntVar(&o.EvalEvery, "eval-every", learn.EvalAuto, "evaluate primal and dual every N passes (-1: auto, at most half the time evaluating)")
	fs.Float64Var(&o.Rho, "rho", 1, "gdmm: augmented Lagrangian penalty rho")
	fs.Float64Var(&o.Eta, "eta", 0, "gdmm: multiplier step eta (0: rho on sequences, rho/4 multilabel)")
	fs.BoolVar(&o.Sublinear, "sublinear", true, "gdmm: sublinear factorwise oracles (ordered maps for transitions; sampled emissions when --sample-parts > 1)")
	fs.IntVar(&o.SampleParts, "sample-parts", 1, "gdmm --sublinear: label subsets nu of the sampled emission oracle (1: exact)")
	fs.Float64Var(&o.RegEmit, "reg-emit", 1, "block regularization: coefficient of 1/2||W_emit||^2 (Belanger et al. 2012; all algorithms)")
	fs.Float64Var(&o.RegTrans, "reg-trans", 1, "block regularization: coefficient of 1/2||W_trans||^2 (transitions, or label pairs for multilabel)")
	fs.BoolVar(&o.Average, "average", false, "ssg: return the weighted average of the iterates")
	jsonOut := fs.Bool("json", false, "print one JSON result object on stdout")
	traceFile := fs.String("trace", "", "write the convergence trace to `FILE` (CSV: "+strings.Join(trace.Columns, ",")+"), one row per evaluation")
	pos, _, err := parseQuiet(fs, args, con)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("train: unexpected argument %q", pos[0])
	}
	a, d, err := learn.PrepareTraining(*algo, *data, &o)
	if err != nil {
		return learnError("train", err)
	}
	var tw *trace.Writer
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return usagef("train: --trace: %v", err)
		}
		defer f.Close()
		if tw, err = trace.NewWriter(f); err != nil {
			return err
		}
	}
	log := con.Logger()
	o.Progress = func(r learn.Result) {
		if tw != nil {
			tw.Write(trace.Row{Iteration: r.Iterations, Seconds: r.Seconds, Dual: r.Dual, Primal: r.Primal, Gap: r.Gap})
		}
		log.Info("train", "iteration", r.Iterations, "seconds", fmt.Sprintf("%.3f", r.Seconds), "primal", r.Primal, "dual", r.Dual, "gap", r.Gap)
	}
	w, res, err := a.Train(ctx, d, o)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if tw != nil && tw.Err() != nil {
		return tw.Err()
	}
	if *out != "" {
		if err := learn.SaveWeights(*out, w); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	if !res.PrimalExact {
		log.Warn("some loss-augmented maximisations were not proved optimal: the primal is a lower estimate")
	}
	fmt.Fprintf(con.Writer(), "train %s: %d iterations, %.3fs, primal %.6g, dual %.6g, gap %.3g (%s objective)\n", res.Algo, res.Iterations, res.Seconds, res.Primal, res.Dual, res.Gap, res.Objective)
	if *jsonOut {
		return json.NewEncoder(stdout).Encode(res.Report())
	}
	return nil
}

// cmdPredict is `coordinator predict`.
func cmdPredict(ctx context.Context, args []string, stdout io.Writer, con *cli.Console) error {
	fs := flagSet("predict")
	weights := fs.String("weights", "", "weights `FILE` (coordinator train -o, or gen's planted.weights)")
	data := fs.String("data", "", "test data `FILE`")
	threads := fs.Int("threads", 1, "goroutines decoding examples")
	jsonOut := fs.Bool("json", false, "print one JSON result object on stdout")
	pos, _, err := parseQuiet(fs, args, con)
	if err != nil {
		return err
	}
	// The short form: predict WEIGHTS DATA.
	if len(pos) == 2 && *weights == "" && *data == "" {
		*weights, *data, pos = pos[0], pos[1], nil
	}
	if len(pos) != 0 {
		return usagef("predict: unexpected argument %q", pos[0])
	}
	w, d, err := learn.PreparePrediction(*weights, *data, *threads)
	if err != nil {
		return learnError("predict", err)
	}
	start := time.Now()
	acc, err := learn.Predict(ctx, w, d, *threads)
	if err != nil {
		return usagef("predict: %v", err)
	}
	acc.Seconds = time.Since(start).Seconds()
	if !acc.Exact {
		con.Logger().Warn("some decodings were not proved optimal")
	}
	fmt.Fprintf(con.Writer(), "predict: accuracy %.4f on %d examples, %.3fs\n", acc.Accuracy, acc.Examples, acc.Seconds)
	if *jsonOut {
		return json.NewEncoder(stdout).Encode(acc)
	}
	return nil
}

// learnError is a usage error of command cmd from learn's checks, the
// settings it names written as flags.
func learnError(cmd string, err error) error {
	var se *learn.SettingError
	if errors.As(err, &se) {
		return usagef("%s: %s", cmd, se.Named(func(s string) string { return "--" + s }))
	}
	return usagef("%s: %v", cmd, err)
}
