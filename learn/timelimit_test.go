package learn

import (
	"context"
	"testing"
	"time"
)

// TestTimeLimitCutsPasses: a time limit already over when the run starts
// stops every trainer inside its first pass (far fewer oracle steps than
// a pass has blocks) and cuts the first evaluation, so the run returns the
// zero weights with their primal, C times the largest Hamming loss of
// every example, which Primal confirms. Checked after whole passes only,
// the limit would let a full pass through.
func TestTimeLimitCutsPasses(t *testing.T) {
	seq, _, _ := gen(t, GenSequence, SeqGenOptions{Labels: 20, Features: 80, Train: 2000, Test: 1, MinLen: 5, MaxLen: 20, LabelFeatures: 2, TokenFeatures: 3, Noise: 0.1, Emission: 2, Transition: 1, Seed: 1})
	ml, _, _ := gen(t, GenMultilabel, MLGenOptions{Labels: 8, Features: 40, Train: 2000, Test: 1, LabelFeatures: 2, ExampleFeatures: 3, MeanLabels: 2, Noise: 0.1, Emission: 2, Interaction: 1, Seed: 1})
	for _, d := range []*Data{{Seq: seq}, {ML: ml}} {
		for _, a := range Algorithms {
			for _, raw := range []Trainer{a.Train, map[string]Trainer{"gdmm": GDMM, "bcfw": bcfw, "ssg": ssg}[a.Name]} {
				o := Options{C: 0.5, TimeLimit: time.Nanosecond, Threads: 1}
				w, res, err := raw(context.Background(), d, o)
				if err != nil {
					t.Fatalf("%s %v: %v", a.Name, d.Kind(), err)
				}
				if res.Steps >= stopCheckEvery {
					t.Errorf("%s %v: %d oracle steps after the limit", a.Name, d.Kind(), res.Steps)
				}
				if res.Iterations != 1 {
					t.Errorf("%s %v: %d passes", a.Name, d.Kind(), res.Iterations)
				}
				p, _, err := Primal(context.Background(), w, d, o.C, 1)
				if err != nil {
					t.Fatal(err)
				}
				if p != res.Primal || w.SqNorm() != 0 {
					t.Errorf("%s %v: reported primal %v, the weights' %v (norm^2 %v)", a.Name, d.Kind(), res.Primal, p, w.SqNorm())
				}
			}
		}
	}
}
