package learn

import (
	"errors"
	"testing"
	"time"
)

// PrepareTraining names the setting that cannot run, and applies the
// default stopping rule only when no stopping rule is given.
func TestPrepareTraining(t *testing.T) {
	for _, c := range []struct{ algo, path, setting string }{
		{"nope", "x", "algo"},
		{"gdmm", "", "data"},
	} {
		var o Options
		_, _, err := PrepareTraining(c.algo, c.path, &o)
		var se *SettingError
		if !errors.As(err, &se) || se.Setting != c.setting {
			t.Errorf("%q %q: %v, want a SettingError naming %s", c.algo, c.path, err, c.setting)
		}
	}
	o := Options{C: 1}
	if _, _, err := PrepareTraining("gdmm", "/nonexistent.conll", &o); err == nil || o.MaxIter != 50 {
		t.Errorf("no stopping rule: error %v, MaxIter %d; want a read error and 50 passes", err, o.MaxIter)
	}
	o = Options{C: 1, TimeLimit: time.Second}
	if _, _, _ = PrepareTraining("gdmm", "/nonexistent.conll", &o); o.MaxIter != 0 {
		t.Errorf("with a time limit: MaxIter %d, want 0 (none)", o.MaxIter)
	}
	if _, _, err := PreparePrediction("w", "d", 0); !errors.As(err, new(*SettingError)) {
		t.Errorf("threads 0: %v, want a SettingError", err)
	}
}
