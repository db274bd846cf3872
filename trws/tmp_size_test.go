package trws

import (
	"fmt"
	"testing"

	"github.com/ddrun/ddrun/generate"
)

func BenchmarkSize(b *testing.B) {
	for _, n := range []int{30, 300} {
		for _, l := range []int{4, 8} {
			if n == 300 && l == 8 {
				n = 150
			}
			m := dense(generate.Potts(generate.GridOptions{Height: n, Width: n, Labels: l, Rho: 1, Seed: 1}))
			nn := n
			b.Run(fmt.Sprintf("n%d/L%d", n, l), func(b *testing.B) {
				r := runnerFor(b, m, 1)
				for range 10 {
					r.iterate()
				}
				c0 := cpuTime()
				for range b.N {
					r.iterate()
				}
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/float64(nn*nn), "cpuns/node")
			})
		}
	}
}
