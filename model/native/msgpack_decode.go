package native

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decodeMsgpack decodes a msgpack document of the native schema. Errors are
// *Error naming the place, without a file name.
func decodeMsgpack(data []byte) (*rawModel, error) {
	d := &mpDecoder{r: mpReader{b: data}, raw: &rawModel{constPos: -1}}
	if err := d.document(); err != nil {
		return nil, err
	}
	return d.raw, nil
}

type mpDecoder struct {
	r   mpReader
	raw *rawModel
}

// elemError is an error at element i of an array.
type elemError struct {
	i   int
	err error
}

func (e *elemError) Error() string { return fmt.Sprintf("[%d]: %v", e.i, e.err) }

// at wraps a reader error with its place (an *Error passes unchanged).
func at(place string, err error) error {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case *Error:
		return e
	case *elemError:
		return at(fmt.Sprintf("%s[%d]", place, e.i), e.err)
	}
	return &Error{Place: place, Msg: err.Error(), Err: err}
}

func float64frombits(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) }

// seenKeys records the keys of one map to reject repeats; bit i is key i of
// a fixed list.
type seenKeys uint32

func (s *seenKeys) add(i int) bool {
	if *s&(1<<i) != 0 {
		return false
	}
	*s |= 1 << i
	return true
}

var topKeys = [...]string{"format", "version", "cards", "unaries", "constant", "factors"}
var factorKeys = [...]string{"kind", "vars", "negated", "table", "weight", "budget", "emission", "trunc"}

// key reads a map key and finds it in keys (-1: unknown).
func (d *mpDecoder) key(keys []string) (int, string, error) {
	k, err := d.r.str()
	if err != nil {
		return 0, "", fmt.Errorf("map key: %w", err)
	}
	for i, name := range keys {
		if string(k) == name {
			return i, name, nil
		}
	}
	return -1, string(k), nil
}

// topKey reads a key of the document's map: a known field, not seen
// before.
func (d *mpDecoder) topKey(seen *seenKeys) (string, error) {
	i, name, err := d.key(topKeys[:])
	switch {
	case err != nil:
		return "", at("", err)
	case i < 0:
		return "", placeErr("", "unknown field %s", quote(name))
	case !seen.add(i):
		return "", placeErr(name, "repeated field")
	}
	return name, nil
}

func (d *mpDecoder) document() error {
	n, err := d.r.length(true)
	if err != nil {
		return at("", fmt.Errorf("the document: %w", err))
	}
	var seen seenKeys
	raw := d.raw
	for range n {
		name, err := d.topKey(&seen)
		if err != nil {
			return err
		}
		if d.r.isNil() {
			continue // null: absent
		}
		switch name {
		case "format":
			raw.hasFormat = true
			s, err := d.r.str()
			if err != nil {
				return at(name, err)
			}
			raw.format = string(s)
		case "version":
			raw.hasVersion = true
			raw.version, err = d.r.integer()
		case "cards":
			raw.hasCards = true
			err = d.cards()
		case "unaries":
			raw.hasUnaries = true
			err = d.unaries()
		case "constant":
			raw.constant, err = d.r.float()
		case "factors":
			err = d.factors()
		}
		if err != nil {
			return at(name, err)
		}
	}
	if d.r.left() > 0 {
		return placeErr("", "%d bytes of data after the document", d.r.left())
	}
	return nil
}

func (d *mpDecoder) cards() error {
	n, err := d.r.length(false)
	if err != nil {
		return err
	}
	d.raw.cards = make([]int, n)
	for i := range n {
		if d.raw.cards[i], err = d.r.intValue(); err != nil {
			return at(fmt.Sprintf("cards[%d]", i), err)
		}
	}
	return nil
}

// floats appends an array of numbers to *arena, which it makes room for
// hint numbers at first.
func (d *mpDecoder) floats(arena *[]float64, hint int) (span, error) {
	n, err := d.r.length(false)
	if err != nil {
		return span{}, err
	}
	reserve(arena, n, hint)
	a := *arena
	sp := span{off: len(a), n: n, ok: true}
	r := &d.r
	for range n {
		// Fast path: a float64.
		if r.off+9 <= len(r.b) && r.b[r.off] == 0xcb {
			a = append(a, float64frombits(r.b[r.off+1:r.off+9]))
			r.off += 9
			continue
		}
		v, err := r.float()
		if err != nil {
			*arena = a
			return span{}, &elemError{len(a) - sp.off, err}
		}
		a = append(a, v)
	}
	*arena = a
	return sp, nil
}

func (d *mpDecoder) unaries() error {
	n, err := d.r.length(false)
	if err != nil {
		return err
	}
	raw := d.raw
	raw.unaries = make([]rawVec, n)
	hint := 0 // the number of unary entries, if the cards came first
	for _, c := range raw.cards {
		hint += c
	}
	hint = min(hint, d.r.left())
	for i := range n {
		if d.r.isNil() {
			raw.unaries[i] = rawVec{pos: -1}
			continue
		}
		sp, err := d.floats(&raw.ufloats, hint)
		if err != nil {
			return at(fmt.Sprintf("unaries[%d]", i), err)
		}
		raw.unaries[i] = rawVec{span: sp, pos: -1}
	}
	return nil
}

func (d *mpDecoder) factors() error {
	n, err := d.r.length(false)
	if err != nil {
		return err
	}
	// A factor takes at least a dozen bytes; do not trust n further.
	n0 := min(n, d.r.left()/12+1)
	d.raw.factors = make([]rawFactor, 0, n0)
	reserve(&d.raw.vars, 0, 2*n0) // most factors are pairs
	for a := range n {
		rf := rawFactor{pos: -1}
		if err := d.factor(a, &rf); err != nil {
			return err
		}
		d.raw.factors = append(d.raw.factors, rf)
	}
	return nil
}

func (d *mpDecoder) factor(a int, rf *rawFactor) error {
	place := func() string { return fmt.Sprintf("factors[%d]", a) }
	n, err := d.r.length(true)
	if err != nil {
		return at(place(), err)
	}
	raw := d.raw
	var seen seenKeys
	for range n {
		i, name, err := d.key(factorKeys[:])
		if err != nil {
			return at(place(), err)
		}
		if i < 0 {
			return placeErr(place(), "unknown field %s", quote(name))
		}
		if !seen.add(i) {
			return placeErr(place()+"."+name, "repeated field")
		}
		if d.r.isNil() {
			continue // null: absent
		}
		switch name {
		case "kind":
			var s []byte
			if s, err = d.r.str(); err == nil {
				rf.hasKind = true
				if rf.kind, rf.kindOK = kindByName(string(s)); !rf.kindOK {
					rf.kindName = string(s)
				}
			}
		case "vars":
			rf.vars, err = d.ints()
		case "negated":
			rf.negated, err = d.bools()
		case "table":
			rf.table, err = d.floats(&raw.tables, d.r.left()/9) // float64s take 9 bytes
		case "emission":
			rf.emission, err = d.floats(&raw.tables, d.r.left()/9)
		case "weight":
			rf.hasWeight = true
			rf.weight, err = d.r.float()
		case "budget":
			rf.hasBudget = true
			rf.budget, err = d.r.integer()
		case "trunc":
			rf.hasTrunc = true
			rf.trunc, err = d.r.float()
		}
		if err != nil {
			return at(place()+"."+name, err)
		}
	}
	return nil
}

func (d *mpDecoder) ints() (span, error) {
	n, err := d.r.length(false)
	if err != nil {
		return span{}, err
	}
	raw := d.raw
	reserve(&raw.vars, n, 0)
	sp := span{off: len(raw.vars), n: n, ok: true}
	for k := range n {
		v, err := d.r.intValue()
		if err != nil {
			return span{}, &elemError{k, err}
		}
		raw.vars = append(raw.vars, v)
	}
	return sp, nil
}

func (d *mpDecoder) bools() (span, error) {
	n, err := d.r.length(false)
	if err != nil {
		return span{}, err
	}
	raw := d.raw
	reserve(&raw.negs, n, 0)
	sp := span{off: len(raw.negs), n: n, ok: true}
	for k := range n {
		v, err := d.r.boolean()
		if err != nil {
			return span{}, &elemError{k, err}
		}
		raw.negs = append(raw.negs, v)
	}
	return sp, nil
}
