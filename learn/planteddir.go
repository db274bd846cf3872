package learn

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// PlantedSet is a planted data set ready to be written to a directory
// (`coordinator gen sequence|multilabel`): its training and test files, the
// planted weights and a README that describes them.
type PlantedSet struct {
	files map[string]func(io.Writer) error
}

// PlantSequence draws a planted sequence-labelling data set (GenSequence):
// train.conll, test.conll, planted.weights and README.
func PlantSequence(o SeqGenOptions) (*PlantedSet, error) {
	tr, te, w, err := GenSequence(o)
	if err != nil {
		return nil, err
	}
	return planted(w, fmt.Sprintf(seqReadme, o.Labels, w.Features, o.Train, o.Test, o.Seed), "conll", WriteSequences, tr, te), nil
}

// PlantMultilabel draws a planted multilabel data set (GenMultilabel):
// train.svm, test.svm, planted.weights and README.
func PlantMultilabel(o MLGenOptions) (*PlantedSet, error) {
	tr, te, w, err := GenMultilabel(o)
	if err != nil {
		return nil, err
	}
	return planted(w, fmt.Sprintf(mlReadme, o.Labels, w.Features, o.Train, o.Test, o.Seed), "svm", WriteMultilabel, tr, te), nil
}

// planted is the set of the planted weights w, its readme, and the train
// and test data written by write to train.EXT and test.EXT.
func planted[D any](w *Weights, readme, ext string, write func(io.Writer, D) error, train, test D) *PlantedSet {
	return &PlantedSet{files: map[string]func(io.Writer) error{
		"train." + ext:    func(out io.Writer) error { return write(out, train) },
		"test." + ext:     func(out io.Writer) error { return write(out, test) },
		"planted.weights": func(out io.Writer) error { return WriteWeights(out, w) },
		"README":          func(out io.Writer) error { _, err := io.WriteString(out, readme); return err },
	}}
}

// Write creates dir (and its parents) and writes the set's files into it;
// an error in writing a file names the file.
func (p *PlantedSet) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range p.files {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

const seqReadme = `Planted sequence-labelling data (coordinator gen sequence): %d labels, %d features,
%d training and %d test sentences, seed %d.

train.conll, test.conll: CoNLL-style columns, one token per line
    LABEL FEAT:VAL FEAT:VAL ...
  LABEL is a 0-based integer, FEAT a 1-based integer; a blank line ends a sentence;
  the first line is the header comment "# ddrun sequence labels=L features=D".
planted.weights: the planted weights (coordinator predict --weights), one nonzero
  per line after the header "ddrun-weights sequence labels=L features=D":
    e FEAT LABEL VALUE   emission
    t A B VALUE          transition from label A to label B
See docs/learning.md.
`

const mlReadme = `Planted multilabel data (coordinator gen multilabel): %d labels, %d features
(feature 1 is a bias, always 1), %d training and %d test examples, seed %d.

train.svm, test.svm: LIBSVM's multilabel format, one example per line
    L1,L2,... FEAT:VAL FEAT:VAL ...
  labels 0-based, FEAT 1-based; the first line is the header comment
  "# ddrun multilabel labels=L features=D".
planted.weights: the planted weights (coordinator predict --weights), one nonzero
  per line after the header "ddrun-weights multilabel labels=L features=D":
    e FEAT LABEL VALUE   unigram weight
    p A B VALUE          pairwise interaction, added when labels A < B are both on
See docs/learning.md.
`
