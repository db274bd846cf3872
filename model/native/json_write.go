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

func (j *jsonWriter) ints(vs []int) {
	j.w.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			j.str(", ")
		}
		j.int(v)
	}
	j.w.WriteByte(']')
}

func (j *jsonWriter) floats(vs []float64) {
	j.w.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			j.str(", ")
		}
		j.float(v)
	}
	j.w.WriteByte(']')
}

func (j *jsonWriter) bools(vs []bool) {
	j.w.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			j.str(", ")
		}
		j.str(strconv.FormatBool(v))
	}
	j.w.WriteByte(']')
}

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

// writeJSON writes m, already checked, to w; w's error is left to Flush.
func writeJSON(w *bufio.Writer, m *model.Model) error {
	j := &jsonWriter{w: w, buf: make([]byte, 0, 32)}
	j.str("{\n  \"format\": \"" + formatName + "\",\n  \"version\": ")
	j.int(formatVersion)
	j.str(",\n  \"cards\": ")
	j.ints(m.Cards)
	j.str(",\n  \"constant\": ")
	j.float(m.Constant)
	if hasUnaries(m) {
		j.str(",\n  \"unaries\": [")
		for i := range m.Cards {
			if i > 0 {
				j.w.WriteByte(',')
			}
			j.str("\n    ")
			j.floats(m.Unaries(i))
		}
		j.str("\n  ]")
	}
	j.str(",\n  \"factors\": [")
	for a := range m.Factors {
		if a > 0 {
			j.w.WriteByte(',')
		}
		j.str("\n    ")
		j.factor(&m.Factors[a])
	}
	if len(m.Factors) > 0 {
		j.str("\n  ")
	}
	j.str("]\n}\n")
	return nil
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
		if f.Emission != nil {
			j.str(`, "emission": `)
			j.floats(f.Emission)
		}
	case f.Kind == model.Pair || f.Kind == model.Potts:
		j.str(`, "weight": `)
		j.float(f.Weight)
	default:
		if f.Negated != nil {
			j.str(`, "negated": `)
			j.bools(f.Negated)
		}
		if f.Kind == model.Budget {
			j.str(`, "budget": `)
			j.int(f.Budget)
		}
	}
	j.w.WriteByte('}')
}
