package consensus

import (
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/slaves"
)

func TestZZRun(t *testing.T) {
	m := generate.Potts(generate.GridOptions{Height: 100, Width: 100, Labels: 8, Rho: 1, Seed: 1})
	p, _ := Decompose(m, slaves.ForFactor)
	o := DefaultOptions()
	o.MaxIter = 600
	o.Tol = 0
	s := newADMM(p, o)
	s.run(t.Context(), nil)
}
