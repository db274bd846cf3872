package generate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ddrun/ddrun/model"
)

// DefaultPottsLabels is the number of labels of a Potts grid when
// GridOptions.Labels is 0: the paper's 8-valued nodes.
const DefaultPottsLabels = 8

// GridOptions sizes a grid model. The paper's settings are 30x30 with Rho in
// {0.5, 1, 1.5, 2} for Ising, and 20x20 with 8 labels and Rho = 10 for Potts.
type GridOptions struct {
	Height, Width int // the grid has Height rows of Width variables, >= 1
	// Labels is the number of states of a Potts variable, >= 2; 0 means
	// DefaultPottsLabels. Ising ignores it (its variables are binary).
	Labels int
	// Rho bounds the couplings, drawn from U[-Rho, Rho]; finite, >= 0.
	Rho  float64
	Seed int64 // seeds the PCG source
	// Pair is the term on a Potts grid's edges, of weight the coupling w:
	// PairPotts (the zero value: w [x = y]), PairLinear (-w min(|x-y|,
	// Trunc)) or PairQuad (-w min((x-y)^2, Trunc)); or PairDense, a general
	// Labels x Labels table of entries ~ U[-Rho, Rho] drawn from a second
	// stream (PCG seeded by (Seed, 1)), edge by edge, row by row. The
	// unaries and the couplings are drawn alike whatever the term. Ising
	// ignores it.
	Pair PairTerm
	// Trunc is the truncation of PairLinear and PairQuad (finite, > 0).
	Trunc float64
}

// PairTerm is the pairwise term of a Potts grid's edges.
type PairTerm uint8

// The pairwise terms.
const (
	PairPotts  PairTerm = iota // model.Potts
	PairLinear                 // model.TruncLinear
	PairQuad                   // model.TruncQuad
	PairDense                  // model.Dense: a random general table
)

var pairNames = [...]string{"potts", "linear", "quad", "dense"}

func (p PairTerm) String() string {
	if int(p) < len(pairNames) {
		return pairNames[p]
	}
	return fmt.Sprintf("PairTerm(%d)", int(p))
}

// ParsePairTerm maps "potts", "linear", "quad" or "dense" to its PairTerm.
func ParsePairTerm(s string) (PairTerm, error) {
	for i, n := range pairNames {
		if s == n {
			return PairTerm(i), nil
		}
	}
	return 0, fmt.Errorf("generate: pairwise term %q: want potts, linear, quad or dense", s)
}

// kind returns the model kind of the term.
func (p PairTerm) kind() model.Kind {
	switch p {
	case PairLinear:
		return model.TruncLinear
	case PairQuad:
		return model.TruncQuad
	case PairDense:
		return model.Dense
	}
	return model.Potts
}

// Validate reports nonsense options, and a grid too big to build whole
// (Potts, Ising).
func (o GridOptions) Validate() error {
	if err := o.validateShape(); err != nil {
		return err
	}
	l := max(o.labels(), 2)
	if o.Height > model.MaxTableEntries/o.Width/l {
		return fmt.Errorf("generate: grid %dx%d with %d labels is too big to build whole (at most %d unary entries; gen streams a larger one)", o.Height, o.Width, l, model.MaxTableEntries)
	}
	return nil
}

// ValidateStream is Validate for a grid given piece by piece (PottsStream,
// IsingStream), which no process holds whole: no bound on its total size
// but that its edges fit the writers' 32-bit factor numbers.
func (o GridOptions) ValidateStream() error {
	if err := o.validateShape(); err != nil {
		return err
	}
	if h, w := int64(o.Height), int64(o.Width); h*w > math.MaxInt32 || h*(w-1)+(h-1)*w > math.MaxInt32 {
		return fmt.Errorf("generate: grid %dx%d has more than %d variables or edges", h, w, math.MaxInt32)
	}
	return nil
}

// validateShape is Validate but the size limit.
func (o GridOptions) validateShape() error {
	if o.Height < 1 || o.Width < 1 {
		return fmt.Errorf("generate: grid %dx%d: sizes must be at least 1", o.Height, o.Width)
	}
	if o.Labels < 0 || o.Labels == 1 {
		return fmt.Errorf("generate: %d labels: want at least 2 (or 0 for %d)", o.Labels, DefaultPottsLabels)
	}
	if err := checkRho(o.Rho); err != nil {
		return err
	}
	if o.Pair > PairDense {
		return fmt.Errorf("generate: unknown pairwise term %d", o.Pair)
	}
	if o.Pair == PairLinear || o.Pair == PairQuad {
		if err := model.CheckPairTerm(o.Pair.kind(), o.Rho, o.Trunc); err != nil {
			return fmt.Errorf("generate: %s term: %w", o.Pair, err)
		}
	}
	return nil
}

func (o GridOptions) labels() int {
	if o.Labels == 0 {
		return DefaultPottsLabels
	}
	return o.Labels
}

func checkRho(rho float64) error {
	if math.IsNaN(rho) || math.IsInf(rho, 0) || rho < 0 {
		return fmt.Errorf("generate: rho %v: want a finite number >= 0", rho)
	}
	return nil
}

// LogicOptions sizes a random logic model.
type LogicOptions struct {
	Vars      int // binary variables, >= 2
	Factors   int // logic factors, >= 0
	Couplings int // pair and Potts factors, >= 0
	// MaxArity bounds the scope of a logic factor: 2 <= MaxArity <= Vars.
	MaxArity int
	// Rho bounds the coupling weights, drawn from U[-Rho, Rho]; finite, >= 0.
	Rho  float64
	Seed int64 // seeds the PCG source
}

// Validate reports nonsense options.
func (o LogicOptions) Validate() error {
	if o.Vars < 2 || o.Vars > model.MaxTableEntries/2 {
		return fmt.Errorf("generate: %d variables: want 2 to %d", o.Vars, model.MaxTableEntries/2)
	}
	if o.Factors < 0 || o.Couplings < 0 {
		return fmt.Errorf("generate: %d factors and %d couplings: counts must be >= 0", o.Factors, o.Couplings)
	}
	if o.MaxArity < 2 || o.MaxArity > o.Vars {
		return fmt.Errorf("generate: max arity %d: want 2 to %d (the number of variables)", o.MaxArity, o.Vars)
	}
	return checkRho(o.Rho)
}

// newRand returns the generators' source: PCG seeded by (seed, 0).
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0)) }

// uniform draws from U[lo, hi).
func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// mustValid panics with err, for options a generator cannot use.
func mustValid(generator string, err error) {
	if err != nil {
		panic(errors.New(generator + ": " + err.Error()))
	}
}
