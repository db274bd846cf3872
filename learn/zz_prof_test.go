package learn

import (
	"os"
	"testing"
)

func TestZZProf(t *testing.T) {
	b := os.Getenv("DDRUN_BROWN")
	if b == "" {
		t.Skip()
	}
	o := Options{C: 1, MaxIter: 1, Sublinear: true, SampleParts: 1}
	_, d, err := PrepareTraining("gdmm", "brown:"+b+"?genres=a-h&sentences=2000&tags="+os.Getenv("TAGS"), &o)
	if err != nil {
		t.Fatal(err)
	}
	o.Validate()
	g := newGDMM(d.Seq, o)
	for i := 0; i < 3; i++ {
		g.pass()
	}
}
