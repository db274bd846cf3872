package indexed

import (
	"testing"

	"github.com/ddrun/ddrun/generate"
)

// BenchmarkWalkLogic walks the structure of a logic model (negated inputs,
// budgets): its records carry what model.Factor keeps behind its pointer,
// so allocs/op counts what decoding them costs.
func BenchmarkWalkLogic(b *testing.B) {
	m := generate.Logic(generate.LogicOptions{Vars: 2000, Factors: 5000, Couplings: 2000, MaxArity: 6, Rho: 1, Seed: 1})
	data := encode(b, m, 0)
	s := openScan(b, data, ReadOptions{})
	v := visitAll()
	b.SetBytes(s.StructureSize())
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Walk(v); err != nil {
			b.Fatal(err)
		}
	}
}
