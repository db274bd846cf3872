package wcsp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// Write writes m to w as a WCSP file named name (the header's problem name).
// Every score must be an integer or -Inf (a cost of top): WCSP costs are
// integers, and a fractional score is refused with an error rather than
// rounded (a score within 1e-9, relative, of an integer is that integer:
// the last bits that exp and log leave on a UAI file's potentials). Each table is shifted so that its smallest finite cost is 0, the
// shifts and the model constant going to one arity-0 function (negative when
// the model's scores can be positive); top is one more than the largest
// total cost any assignment can reach, so that toulbar2's rule "a total
// >= top is infeasible" forbids exactly the -Inf assignments. The unaries are
// written as arity-1 functions; every factor, of any kind, as a table.
// Reading the output back gives a model with the same score for every
// assignment.
func Write(w io.Writer, m *model.Model, name string) error {
	if err := write(w, m, name); err != nil {
		return fmt.Errorf("wcsp: write: %w", err)
	}
	return nil
}

// WriteFile writes m to the file at path, gzip-compressed when path ends in
// .gz; on failure it removes the partial file.
func WriteFile(path string, m *model.Model) error {
	return uai.CreateFile("wcsp", path, func(w io.Writer) error { return write(w, m, uai.ProblemName(path)) })
}

// outFunc is one cost function of the output: integer costs over vars (a
// nil cost marks a forbidden entry, written as top).
type outFunc struct {
	vars  []int
	costs []int64
	bad   []bool // forbidden entries
	max   int64  // largest finite cost
}

// integralTol is how far from an integer a score may be and still be
// written as that integer: a UAI file of potentials exp(-cost) reads back
// as -cost give or take the last bits of the logarithm.
const integralTol = 1e-9

// integral returns the integer s stands for: s rounded, when s is finite,
// within integralTol (relative, at least absolute) of it and at most 2^53
// in magnitude.
func integral(s float64) (float64, bool) {
	r := math.Round(s)
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(r) > maxExact || math.Abs(s-r) > integralTol*math.Max(1, math.Abs(s)) {
		return 0, false
	}
	return r, true
}

// toCosts turns a table of scores into costs shifted to a minimum of 0,
// returning the shift (the minimum cost); what names the table for errors.
func toCosts(scores []float64, what string) (f outFunc, shift int64, err error) {
	f.costs = make([]int64, len(scores))
	f.bad = make([]bool, len(scores))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for e, s := range scores {
		if math.IsInf(s, -1) {
			f.bad[e] = true
			continue
		}
		r, ok := integral(s)
		if !ok {
			return f, 0, fmt.Errorf("%s entry %d: score %v is not an integer of magnitude at most 2^53 (WCSP costs are integers)", what, e, s)
		}
		c := int64(-r)
		f.costs[e] = c
		lo, hi = min(lo, c), max(hi, c)
	}
	if lo > hi { // all forbidden
		return f, 0, nil
	}
	for e := range f.costs {
		if !f.bad[e] {
			f.costs[e] -= lo
		}
	}
	f.max = hi - lo
	return f, lo, nil
}

func write(w io.Writer, m *model.Model, name string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if name = strings.Join(strings.Fields(name), "_"); name == "" {
		name = "ddrun"
	}
	var funcs []outFunc
	var total, constant float64 // total: the largest finite total cost
	mc, ok := integral(m.Constant)
	if !ok {
		return fmt.Errorf("constant %v is not an integer of magnitude at most 2^53 (WCSP costs are integers)", m.Constant)
	}
	constant = -mc
	add := func(vars []int, scores []float64, what string) error {
		f, shift, err := toCosts(scores, what)
		if err != nil {
			return err
		}
		f.vars = vars
		constant += float64(shift)
		if len(vars) == 0 && !f.bad[0] {
			return nil // all in the constant
		}
		total += float64(f.max)
		funcs = append(funcs, f)
		return nil
	}
	for i := range m.Cards {
		u := m.Unaries(i)
		zero := true
		for _, s := range u {
			zero = zero && s == 0
		}
		if !zero {
			if err := add([]int{i}, u, fmt.Sprintf("variable %d's unaries", i)); err != nil {
				return err
			}
		}
	}
	for a := range m.Factors {
		if _, err := m.TableSize(m.Factors[a].Vars); err != nil {
			return fmt.Errorf("factor %d: %w", a, err)
		}
		if err := add(m.Factors[a].Vars, m.DenseTable(a), fmt.Sprintf("factor %d", a)); err != nil {
			return err
		}
	}
	if math.Abs(constant) > maxExact {
		return fmt.Errorf("constant cost %v: magnitude above 2^53", constant)
	}
	if total+max(constant, 0) >= maxExact { // so that top is exact
		return fmt.Errorf("total cost bound %v: not below 2^53", total+max(constant, 0))
	}
	top := total + max(constant, 0) + 1
	topTok := strconv.FormatInt(int64(top), 10)
	nf := len(funcs)
	if constant != 0 {
		nf++
	}
	maxDom := 0
	for _, c := range m.Cards {
		maxDom = max(maxDom, c)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "%s %d %d %d %s\n", name, len(m.Cards), maxDom, nf, topTok)
	for i, c := range m.Cards {
		if i > 0 {
			bw.WriteByte(' ')
		}
		bw.WriteString(strconv.Itoa(c))
	}
	bw.WriteByte('\n')
	if constant != 0 {
		fmt.Fprintf(bw, "0 %d 0\n", int64(constant))
	}
	buf := make([]byte, 0, 64)
	for _, f := range funcs {
		// the default is the commoner of 0 and forbidden
		zeros, bad := 0, 0
		for e := range f.costs {
			if f.bad[e] {
				bad++
			} else if f.costs[e] == 0 {
				zeros++
			}
		}
		defBad := bad > zeros
		listed := 0
		for e := range f.costs {
			if f.bad[e] != defBad || (!defBad && f.costs[e] != 0) {
				listed++
			}
		}
		def := "0"
		if defBad {
			def = topTok
		}
		buf = buf[:0]
		buf = strconv.AppendInt(buf, int64(len(f.vars)), 10)
		for _, v := range f.vars {
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
		fmt.Fprintf(bw, "%s %s %d\n", buf, def, listed)
		x := make([]int, len(f.vars))
		for e := range f.costs {
			if f.bad[e] != defBad || (!defBad && f.costs[e] != 0) {
				buf = buf[:0]
				for _, s := range x {
					buf = strconv.AppendInt(buf, int64(s), 10)
					buf = append(buf, ' ')
				}
				if f.bad[e] {
					buf = append(buf, topTok...)
				} else {
					buf = strconv.AppendInt(buf, f.costs[e], 10)
				}
				buf = append(buf, '\n')
				bw.Write(buf)
			}
			for k := len(x) - 1; k >= 0; k-- {
				if x[k]++; x[k] < m.Cards[f.vars[k]] {
					break
				}
				x[k] = 0
			}
		}
	}
	return bw.Flush()
}

// WriteSolution writes the assignment x in toulbar2's solution format, as
// toulbar2 -w writes it: the states (value indexes) on one line, separated
// by spaces.
func WriteSolution(w io.Writer, x []int) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := make([]byte, 0, 64)
	for i, s := range x {
		if s < 0 {
			return fmt.Errorf("wcsp: write solution: variable %d has negative state %d", i, s)
		}
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ' ')
		}
		bw.Write(strconv.AppendInt(buf, int64(s), 10))
	}
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("wcsp: write solution: %w", err)
	}
	return nil
}
