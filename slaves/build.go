package slaves

import (
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/partition"
)

// Build returns the solver for one slave of a decomposition plan.
func Build(m *model.Model, s partition.Slave) (Slave, error) {
	switch s.Shape {
	case partition.Single:
		if len(s.Factors) != 1 {
			return nil, fmt.Errorf("single slave with %d factors", len(s.Factors))
		}
		return ForFactor(m, s.Factors[0])
	}
	return nil, fmt.Errorf("no solver for %s slaves", s.Shape)
}
