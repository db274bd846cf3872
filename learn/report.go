package learn

import (
	"math"
	"strings"
)

// Report is the result schema of `coordinator train --json`: a Result
// whose Dual and Gap are null when the algorithm has no dual.
type Report struct {
	Run
	Dual      *float64 `json:"dual"` // null when the algorithm has no dual
	Gap       *float64 `json:"gap"`
	Objective string   `json:"objective,omitempty"` // exact or lp-relaxed (Result.Objective)
}

// Report is r in the result schema.
func (r Result) Report() Report {
	j := Report{Run: r.Run, Objective: r.Objective}
	if !math.IsInf(r.Dual, 0) && !math.IsNaN(r.Dual) {
		d, g := r.Dual, r.Gap
		j.Dual, j.Gap = &d, &g
	}
	return j
}

// AlgorithmNames lists the training algorithms' names (Algorithms),
// comma separated.
func AlgorithmNames() string {
	var n []string
	for _, a := range Algorithms {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}
