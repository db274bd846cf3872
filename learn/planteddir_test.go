package learn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A planted set written to a directory reads back: the training and test
// files with the sizes asked for, the planted weights, and a README that
// states them.
func TestPlantedSetWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "seq") // Write creates it
	set, err := PlantSequence(SeqGenOptions{Labels: 4, Train: 7, Test: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
	for name, sentences := range map[string]int{"train.conll": 7, "test.conll": 3} {
		d, err := ReadData(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if d.Seq == nil || len(d.Seq.Start)-1 != sentences || d.Seq.Labels != 4 {
			t.Errorf("%s: %+v, want %d sentences over 4 labels", name, d.Seq, sentences)
		}
	}
	if w, err := LoadWeights(filepath.Join(dir, "planted.weights")); err != nil || w.Labels != 4 {
		t.Errorf("planted.weights: %v, %v", w, err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README"))
	if err != nil || !strings.Contains(string(readme), "4 labels, 100 features,\n7 training and 3 test sentences, seed 2.") {
		t.Errorf("README: %q, %v", readme, err)
	}

	ml, err := PlantMultilabel(MLGenOptions{Labels: 3, Train: 5, Test: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ml.Write(filepath.Join(dir, "ml")); err != nil {
		t.Fatal(err)
	}
	if d, err := ReadData(filepath.Join(dir, "ml", "train.svm")); err != nil || d.ML == nil {
		t.Errorf("ml/train.svm: %v, %v", d, err)
	}
	// A file in the way of the directory is an error.
	if err := set.Write(filepath.Join(dir, "README")); err == nil {
		t.Error("Write into a file: no error")
	}
}
