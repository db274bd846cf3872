package native

import (
	"bufio"

	"github.com/ddrun/ddrun/model"
	"github.com/vmihailenco/msgpack/v5"
)

// writeMsgpack writes d, already checked, to w: floats as float64, integers
// in their shortest form, the fields in the order of the JSON encoding.
func writeMsgpack(w *bufio.Writer, d *modelDoc) error {
	e := &mpWriter{enc: msgpack.NewEncoder(w)}
	fields := 5
	if d.unaries {
		fields++
	}
	e.mapLen(fields)
	e.str("format")
	e.str(formatName)
	e.str("version")
	e.int(formatVersion)
	e.str("cards")
	e.arrayLen(d.n)
	for i := range d.n {
		e.int(d.card(i))
	}
	e.str("constant")
	e.float(d.constant)
	if d.unaries {
		e.str("unaries")
		e.arrayLen(d.n)
		d.eachUnaries(func(_ int, u []float64) { e.floats(u) })
	}
	e.str("factors")
	e.arrayLen(d.nfactors)
	d.eachFactor(func(_ int, f *model.Factor) { e.factor(f) })
	return e.err
}

// mpWriter keeps the first error of a series of encodings.
type mpWriter struct {
	enc *msgpack.Encoder
	err error
}

func (e *mpWriter) keep(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *mpWriter) mapLen(n int)    { e.keep(e.enc.EncodeMapLen(n)) }
func (e *mpWriter) arrayLen(n int)  { e.keep(e.enc.EncodeArrayLen(n)) }
func (e *mpWriter) str(s string)    { e.keep(e.enc.EncodeString(s)) }
func (e *mpWriter) int(v int)       { e.keep(e.enc.EncodeInt(int64(v))) }
func (e *mpWriter) float(v float64) { e.keep(e.enc.EncodeFloat64(v)) }
func (e *mpWriter) boolean(v bool)  { e.keep(e.enc.EncodeBool(v)) }
func (e *mpWriter) floats(v []float64) {
	e.arrayLen(len(v))
	for _, x := range v {
		e.float(x)
	}
}

func (e *mpWriter) factor(f *model.Factor) {
	n := 3 // kind, vars and the kind's own field
	logic := f.Kind.IsLogic()
	if f.Kind == model.Sequence && f.EmissionScores() != nil || f.Kind.IsTruncated() {
		n++
	}
	if logic {
		n = 2
		if f.NegatedInputs() != nil {
			n++
		}
		if f.Kind == model.Budget {
			n++
		}
	}
	e.mapLen(n)
	e.str("kind")
	e.str(f.Kind.String())
	e.str("vars")
	e.arrayLen(len(f.Vars))
	for _, v := range f.Vars {
		e.int(v)
	}
	switch {
	case f.Kind == model.Dense:
		e.str("table")
		e.floats(f.Table)
	case f.Kind == model.Sequence:
		e.str("table")
		e.floats(f.Table)
		if em := f.EmissionScores(); em != nil {
			e.str("emission")
			e.floats(em)
		}
	case !logic:
		e.str("weight")
		e.float(f.Weight)
		if f.Kind.IsTruncated() {
			e.str("trunc")
			e.float(f.Trunc)
		}
	default:
		if neg := f.NegatedInputs(); neg != nil {
			e.str("negated")
			e.arrayLen(len(neg))
			for _, b := range neg {
				e.boolean(b)
			}
		}
		if f.Kind == model.Budget {
			e.str("budget")
			e.int(f.BudgetBound())
		}
	}
}
