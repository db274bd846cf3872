package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestTrainGDMMMultilabel runs gen multilabel, train --algo gdmm and
// predict end to end: the JSON names the LP-relaxed objective, the dual
// bounds the primal, and the trained weights decode the test set.
func TestTrainGDMMMultilabel(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "gen", "multilabel", "--labels", "20", "--train", "60", "--test", "60", "--quiet", "-o", dir); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	w := filepath.Join(dir, "w.weights")
	code, stdout, stderr := runCLI(t, "train", "--algo", "gdmm", "--data", filepath.Join(dir, "train.svm"), "--max-iter", "30", "--eval-every", "10", "--json", "--quiet", "-o", w)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	var r struct {
		Primal    float64  `json:"primal"`
		Dual      *float64 `json:"dual"`
		Objective string   `json:"objective"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("train --json: %v: %q", err, stdout)
	}
	if r.Objective != "lp-relaxed" || r.Dual == nil || *r.Dual > r.Primal+1e-9 {
		t.Fatalf("train --json: %q", stdout)
	}
	code, stdout, stderr = runCLI(t, "predict", "--weights", w, "--data", filepath.Join(dir, "test.svm"), "--json", "--quiet")
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	var a struct {
		Accuracy float64 `json:"accuracy"`
	}
	if err := json.Unmarshal([]byte(stdout), &a); err != nil || a.Accuracy < 0.8 {
		t.Fatalf("predict --json: %v %q", err, stdout)
	}
}
