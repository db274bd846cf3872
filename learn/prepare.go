package learn

import (
	"context"
	"fmt"
)

// SettingError is a training or prediction setting that cannot run,
// naming the setting as the front ends do ("algo", "data", "threads"); a
// front end writes the name its own way (a command line as --algo).
type SettingError struct {
	Setting string
	Problem string
}

func (e *SettingError) Error() string { return e.Setting + " " + e.Problem }

// Named is the message with the setting written by name.
func (e *SettingError) Named(name func(string) string) string {
	return name(e.Setting) + " " + e.Problem
}

// PrepareTraining is what a training run needs before it starts: the
// algorithm named algo, its options o with the default stopping rule (50
// passes when neither a time limit, a pass count nor a tolerance is
// given) and validated, and the training data read from path and checked.
// Errors about algo or path are *SettingError.
func PrepareTraining(algo, path string, o *Options) (Algorithm, *Data, error) {
	a, ok := Lookup(algo)
	if !ok {
		return a, nil, &SettingError{"algo", fmt.Sprintf("%q: want one of %s", algo, AlgorithmNames())}
	}
	if a.Train == nil {
		return a, nil, &SettingError{"algo", algo + " is not implemented yet"}
	}
	if path == "" {
		return a, nil, &SettingError{"data", "FILE is required"}
	}
	if o.TimeLimit == 0 && o.MaxIter == 0 && o.Tol == 0 {
		o.MaxIter = 50
	}
	if err := o.Validate(); err != nil {
		return a, nil, err
	}
	spec, isCorpus, err := ParseCorpusSpec(path)
	if err != nil {
		return a, nil, &SettingError{"data", err.Error()}
	}
	var d *Data
	if isCorpus {
		var fd *FeatureDict
		if d, fd, err = ReadCorpusTraining(spec); err != nil {
			return a, nil, err
		}
		a.Train = withDict(a.Train, fd)
	} else if d, err = ReadData(path); err != nil {
		return a, nil, err
	}
	if err := CheckData(d); err != nil {
		return a, nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, d, nil
}

// PreparePrediction reads the weights and the test data of a prediction
// on threads goroutines. Errors about the settings are *SettingError.
func PreparePrediction(weights, data string, threads int) (*Weights, *Data, error) {
	if weights == "" || data == "" {
		return nil, nil, &SettingError{"weights", "FILE and --data FILE are required"}
	}
	if threads < 1 {
		return nil, nil, &SettingError{"threads", fmt.Sprintf("%d: want >= 1", threads)}
	}
	w, err := LoadWeights(weights)
	if err != nil {
		return nil, nil, err
	}
	spec, isCorpus, err := ParseCorpusSpec(data)
	switch {
	case err != nil:
		return nil, nil, &SettingError{"data", err.Error()}
	case isCorpus && w.Dict == nil:
		return nil, nil, &SettingError{"data", fmt.Sprintf("%s: the weights %s have no feature dictionary (train them on a corpus: --data brown:DIR or conll:FILE)", data, weights)}
	case isCorpus:
		d, err := ReadCorpusWith(spec, w.Dict)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", data, err)
		}
		return w, d, nil
	}
	d, err := ReadData(data)
	if err != nil {
		return nil, nil, err
	}
	return w, d, nil
}

// withDict is tr whose weights carry the feature dictionary fd (saved
// with them).
func withDict(tr Trainer, fd *FeatureDict) Trainer {
	return func(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
		w, r, err := tr(ctx, d, o)
		if w != nil {
			w.Dict = fd
		}
		return w, r, err
	}
}
