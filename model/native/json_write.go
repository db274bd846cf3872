package native

import (
	"bufio"
	"math"
	"strconv"

	"github.com/ddrun/ddrun/model"
)

// jsonWriter writes the JSON encoding: one line per variable's unaries and
// per factor, numbers in their shortest exact form, -Inf as "-inf".
type jsonWriter struct {
	w   *bufio.Writer
	buf []byte
}

func (j *jsonWriter) str(s string) { j.w.WriteString(s) }

func (j *jsonWriter) int(v int) {
	j.buf = strconv.AppendInt(j.buf[:0], int64(v), 10)
	j.w.Write(j.buf)
}

func (j *jsonWriter) float(v float64) {
	if math.IsInf(v, -1) {
		j.w.WriteString(`"-inf"`)
		return
	}
	j.buf = strconv.AppendFloat(j.buf[:0], v, 'g', -1, 64)
	j.w.Write(j.buf)
}

// list writes vs as a JSON array, each element by item.
func list[T any](j *jsonWriter, vs []T, item func(T)) {
	j.w.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			j.str(", ")
		}
		item(v)
	}
	j.w.WriteByte(']')
}

func (j *jsonWriter) ints(vs []int)       { list(j, vs, j.int) }
func (j *jsonWriter) floats(vs []float64) { list(j, vs, j.float) }
func (j *jsonWriter) bools(vs []bool)     { list(j, vs, j.bool) }
func (j *jsonWriter) bool(v bool)         { j.str(strconv.FormatBool(v)) }

// hasUnaries reports whether any unary differs from +0 (bit for bit, so
// that -0 survives a round trip).
func hasUnaries(m *model.Model) bool {
	for _, v := range m.Unary {
		if math.Float64bits(v) != 0 {
			return true
		}
	}
	return false
}

// writeJSON writes d, already checked, to w; w's error is left to Flush.
func writeJSON(w *bufio.Writer, d *modelDoc) error {
	j := &jsonWriter{w: w, buf: make([]byte, 0, 32)}
	j.str("{\n  \"format\": \"" + formatName + "\",\n  \"version\": ")
	j.int(formatVersion)
	j.str(",\n  \"cards\": [")
	for i := range d.n {
		if i > 0 {
			j.str(", ")
		}
		j.int(d.card(i))
	}
	j.str("],\n  \"constant\": ")
	j.float(d.constant)
	if d.unaries {
		j.str(",\n  \"unaries\": [")
		d.eachUnaries(func(i int, u []float64) {
			if i > 0 {
				j.w.WriteByte(',')
			}
			j.str("\n    ")
			j.floats(u)
		})
		j.str("\n  ]")
	}
	j.str(",\n  \"factors\": [")
	d.eachFactor(func(a int, f *model.Factor) {
		if a > 0 {
			j.w.WriteByte(',')
		}
		j.str("\n    ")
		j.factor(f)
	})
	if d.nfactors > 0 {
		j.str("\n  ")
	}
	j.str("]\n}\n")
	return nil
}

// modelDoc is what the writers need of a model, held (docOf) or streamed.
type modelDoc struct {
	n           int
	card        func(i int) int
	constant    float64
	unaries     bool // whether to write the unaries (any differs from +0)
	nfactors    int
	eachUnaries func(fn func(i int, u []float64))
	eachFactor  func(fn func(a int, f *model.Factor))
}

// docOf returns m's modelDoc.
func docOf(m *model.Model) *modelDoc {
	return &modelDoc{
		n:        len(m.Cards),
		card:     func(i int) int { return m.Cards[i] },
		constant: m.Constant,
		unaries:  hasUnaries(m),
		nfactors: len(m.Factors),
		eachUnaries: func(fn func(int, []float64)) {
			for i := range m.Cards {
				fn(i, m.Unaries(i))
			}
		},
		eachFactor: func(fn func(int, *model.Factor)) {
			for a := range m.Factors {
				fn(a, &m.Factors[a])
			}
		},
	}
}

func (j *jsonWriter) factor(f *model.Factor) {
	j.str(`{"kind": "`)
	j.str(f.Kind.String())
	j.str(`", "vars": `)
	j.ints(f.Vars)
	switch {
	case f.Kind == model.Dense:
		j.str(`, "table": `)
		j.floats(f.Table)
	case f.Kind == model.Sequence:
		j.str(`, "table": `)
		j.floats(f.Table)
		if e := f.EmissionScores(); e != nil {
			j.str(`, "emission": `)
			j.floats(e)
		}
	case f.Kind == model.Pair || f.Kind == model.Potts:
		j.str(`, "weight": `)
		j.float(f.Weight)
	case f.Kind.IsTruncated():
		j.str(`, "weight": `)
		j.float(f.Weight)
		j.str(`, "trunc": `)
		j.float(f.Trunc)
	default:
		if neg := f.NegatedInputs(); neg != nil {
			j.str(`, "negated": `)
			j.bools(neg)
		}
		if f.Kind == model.Budget {
			j.str(`, "budget": `)
			j.int(f.BudgetBound())
		}
	}
	j.w.WriteByte('}')
}
