package learn

import (
	"math"
	"strings"
)

// Report is the result schema of `coordinator train --json`: a Result
// whose Dual and Gap are null when the algorithm has no dual.
type Report struct {
	Algo       string  `json:"algo"`
	Iterations int     `json:"iterations"`
	Seconds    float64 `json:"seconds"`
	// PassSeconds is the part of Seconds spent in passes (the rest
	// evaluates the objective): per-pass cost, comparable between
	// trainers whatever their evaluation schedules; PassCPUSeconds the
	// CPU seconds of the passes (a measure that the machine's other load
	// does not inflate).
	PassSeconds    float64  `json:"pass_seconds"`
	PassCPUSeconds float64  `json:"pass_cpu_seconds"`
	Primal         float64  `json:"primal"`
	Dual           *float64 `json:"dual"` // null when the algorithm has no dual
	Gap            *float64 `json:"gap"`
	Objective      string   `json:"objective,omitempty"` // exact or lp-relaxed (Result.Objective)
}

// Report is r in the result schema.
func (r Result) Report() Report {
	j := Report{Algo: r.Algo, Iterations: r.Iterations, Seconds: r.Seconds, PassSeconds: r.PassSeconds, PassCPUSeconds: r.PassCPUSeconds, Primal: r.Primal, Objective: r.Objective}
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
