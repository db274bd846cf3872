package engine

import (
	"testing"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/convexmp"
	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/elim"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/trws"
)

// Every algorithm's Validate allocates nothing on good options (solver.Want
// and FirstBad box the values only for a bad option), and each still
// names a bad one.
func TestValidateAllocatesNothing(t *testing.T) {
	cm, tr, dt, co, an, el := convexmp.DefaultOptions(), trws.DefaultOptions(), dtrws.DefaultOptions(),
		consensus.DefaultOptions(), anytime.DefaultOptions(), elim.DefaultOptions()
	var ex exact.Options
	for _, c := range []struct {
		name     string
		validate func() error
		spoil    func()
	}{
		{"convexmp", cm.Validate, func() { cm.MaxIter = -1 }},
		{"trws", tr.Validate, func() { tr.MaxIter = -1 }},
		{"dtrws", dt.Validate, func() { dt.Parts = 0 }},
		{"consensus", co.Validate, func() { co.MaxIter = -1 }},
		{"anytime", an.Validate, func() { an.Tol = -1 }},
		{"elim", el.Validate, func() { el.Tol = -1 }},
		{"exact", ex.Validate, func() { ex.Tol = -1 }},
	} {
		if err := c.validate(); err != nil {
			t.Fatalf("%s: the defaults: %v", c.name, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.validate() }); n != 0 {
			t.Errorf("%s: Validate allocates %v times on good options", c.name, n)
		}
		c.spoil()
		if c.validate() == nil {
			t.Errorf("%s: a bad option passed", c.name)
		}
	}
}
