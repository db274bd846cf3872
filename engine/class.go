package engine

import (
	"fmt"

	"github.com/ddrun/ddrun/anytime"
	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/model"
)

// Class is what Choose needs of a model, gathered by a coordinator that
// does not hold it (a sharded run streams the file's factors once):
// the counts, the first factor over more than two variables that is not
// a Sequence (Higher -1: none) and its arity, and the pairs of variables
// the pairwise factors join, counted with repeats (Pairs: a Sequence
// joins each pair of neighbours in its chain).
type Class struct {
	Vars, Factors       int
	Higher, HigherArity int
	Pairs               int
}

// Add counts factor a of the model into c (c starts with Higher -1).
func (c *Class) Add(a int, f *model.Factor) {
	c.Factors++
	switch {
	case f.Kind == model.Sequence:
		c.Pairs += max(0, len(f.Vars)-1)
	case len(f.Vars) == 2:
		c.Pairs++
	case len(f.Vars) > 2 && c.Higher < 0:
		c.Higher, c.HigherArity = a, len(f.Vars)
	}
}

// ChooseClass is Choose from a model's Class: the same rule
// (anytime.Choose), except that a graph whose pairs, counted with
// repeats, could make it dense is taken for dense (the distinct pairs are
// not counted without the model): DD-ADMM there, as for a dense model.
func ChooseClass(c Class) (anytime.Relaxation, string) {
	if c.Higher >= 0 {
		return anytime.ADMM, fmt.Sprintf("factor %d is over %d variables, not a pairwise model: DD-ADMM (AD3) takes factors of any arity", c.Higher, c.HigherArity)
	}
	n := float64(c.Vars)
	deg := 0.0
	if c.Vars > 0 {
		deg = 2 * float64(c.Pairs) / n
	}
	if c.Vars > 1 && deg >= anytime.DenseDegree && float64(c.Pairs) >= anytime.DenseShare*n*(n-1)/2 {
		return anytime.ADMM, fmt.Sprintf("pairwise model that may be dense (%d variables, %d pairwise terms, average degree up to %.1f >= %d): TRW-S stalls with a weaker bound and labelling on near-complete graphs, DD-ADMM does not", c.Vars, c.Pairs, deg, anytime.DenseDegree)
	}
	return anytime.TRWS, fmt.Sprintf("pairwise model (all %d factors over at most 2 variables, average degree at most %.1f, not near-complete): TRW-S gives the tightest bound soonest on such models", c.Factors, deg)
}

// AskedTRWS reports whether TRW-S was asked for (--algo trws), not chosen.
func (j *Job) AskedTRWS() bool {
	return j.Algorithm.Name == string(anytime.TRWS) && !j.Settings.Auto
}

// CheckClass is ChooseForRun's refusal of a model of class c, without
// its choice: TRW-S asked for (--algo trws) on a model with a factor over
// more than two variables.
func (j *Job) CheckClass(c Class) error {
	if j.AskedTRWS() && c.Higher >= 0 {
		return errorf("%s trws: factor %d is over %d variables (TRW-S takes pairwise models)", Name("algo"), c.Higher, c.HigherArity)
	}
	return nil
}

// ChooseForRun chooses a distributed job's algorithm by the class of its
// model, as Bind does for solve, when nothing else decided it (no
// algorithm and no setting of dual decomposition given): it returns
// whether the job now runs distributed TRW-S (package dtrws), with the
// reason in Why; a job that keeps DD-ADMM keeps its settings. A job that
// asked for TRW-S (--algo trws) runs it on a pairwise model and is refused
// on another.
func (j *Job) ChooseForRun(c Class) (bool, error) {
	s := &j.Settings
	if err := j.CheckClass(c); err != nil {
		return false, err
	}
	if j.AskedTRWS() {
		j.Threads, j.Why = 1, "--algo trws; each worker runs its part on one thread"
		return true, nil
	}
	if !s.Auto || s.Exact {
		return false, nil
	}
	for _, n := range []string{"step", "eps-descent", "slaves", "eta", "adapt-eta", "tau"} {
		if s.given(n) {
			return false, nil
		}
	}
	r, why := ChooseClass(c)
	if r != anytime.TRWS {
		j.Why = why
		return false, nil
	}
	a, err := Find(string(anytime.TRWS))
	if err != nil {
		return false, err
	}
	s.Algo, j.Algorithm, j.Threads, j.Why = a.Name, a, 1, why+"; each worker runs its part on one thread"
	return true, nil
}

// DTRWS is distributed TRW-S's options for the job on parts parts: the
// job's limits (max-iter, time-limit, tol; every iteration reported, as
// solve's TRW-S does), a candidate scored every 5 iterations (scoring one
// costs each part about half a TRW-S iteration: the copy, an ICM sweep and
// the score), the final polish bounded by time when the parts of a model
// of vars variables are larger than dtrws.TimedPolishVars (on smaller ones
// every round runs, so the result does not depend on the machine's
// speed), the package's defaults otherwise.
func (j *Job) DTRWS(parts, vars int) dtrws.Options {
	o := dtrws.DefaultOptions()
	o.Limits = j.Settings.Limits()
	o.Parts, o.Threads, o.PrimalEvery = parts, parts, 5
	o.TimedPolish = vars/max(1, parts) > dtrws.TimedPolishVars
	return o
}
