package native

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// jfloat is a float64 in JSON: a number, or one of the strings "-inf" and
// "-Infinity" (any case). It never fails to decode: anything else becomes
// NaN, +Inf or badNumber, which the build step reports with its place.
type jfloat float64

func (f *jfloat) UnmarshalJSON(b []byte) error {
	*f = jfloat(parseJSONFloat(b))
	return nil
}

func parseJSONFloat(b []byte) float64 {
	if len(b) == 0 {
		return badNumber
	}
	if b[0] == '"' {
		if len(b) < 2 || b[len(b)-1] != '"' {
			return badNumber
		}
		return parseInfName(b[1 : len(b)-1])
	}
	if b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return badNumber // null, true, false, an array or an object
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) {
		return badNumber // out of float64 range
	}
	return v
}

// parseInfName maps the spellings of the non-finite values to them: only
// -Inf is accepted in the end, but naming NaN and +Inf gives clearer errors.
func parseInfName(s []byte) float64 {
	switch strings.ToLower(string(s)) {
	case "-inf", "-infinity":
		return math.Inf(-1)
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1)
	case "nan":
		return math.NaN()
	}
	return badNumber
}

// jsonFactor is one element of "factors". Pointers and nil slices tell an
// absent (or null) field from a zero one.
type jsonFactor struct {
	Kind     *string  `json:"kind"`
	Vars     []int    `json:"vars"`
	Negated  []bool   `json:"negated"`
	Table    []jfloat `json:"table"`
	Emission []jfloat `json:"emission"`
	Weight   *jfloat  `json:"weight"`
	Budget   *int     `json:"budget"`
	Trunc    *jfloat  `json:"trunc"`
}

// jsonReader decodes a JSON document into a rawModel.
type jsonReader struct {
	data []byte
	dec  *json.Decoder
	raw  *rawModel
}

// decodeJSON decodes data. Errors are *Error with byte offsets, no file name.
func decodeJSON(data []byte) (*rawModel, error) {
	if !json.Valid(data) {
		return nil, jsonSyntaxError(data)
	}
	r := &jsonReader{data: data, dec: json.NewDecoder(bytes.NewReader(data)), raw: &rawModel{constPos: -1}}
	r.dec.DisallowUnknownFields()
	if err := r.document(); err != nil {
		return nil, err
	}
	return r.raw, nil
}

// jsonSyntaxError locates the syntax error of invalid JSON.
func jsonSyntaxError(data []byte) error {
	var v struct{}
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := se.Offset - 1 // the offending byte
		if strings.Contains(se.Error(), "unexpected end") {
			off = se.Offset // just after the end
		}
		if off < 0 {
			off = 0
		}
		return (&Error{Msg: "syntax error: " + se.Error(), Err: err}).atOffset(off)
	}
	return &Error{Msg: "syntax error", Err: err}
}

// skipSpace returns the offset of the first non-space byte from off on.
func (r *jsonReader) skipSpace(off int64) int64 {
	for off < int64(len(r.data)) {
		switch r.data[off] {
		case ' ', '\t', '\n', '\r':
			off++
			continue
		}
		break
	}
	return off
}

// afterSep returns the offset just after the separating comma or colon
// before the next value: where Decode's view of the input starts.
func (r *jsonReader) afterSep() int64 {
	off := r.skipSpace(r.dec.InputOffset())
	if off < int64(len(r.data)) && (r.data[off] == ',' || r.data[off] == ':') {
		off++
	}
	return off
}

// next returns the offset of the next value.
func (r *jsonReader) next() int64 { return r.skipSpace(r.afterSep()) }

// decode decodes the next value into v, reporting errors at place.
func (r *jsonReader) decode(v any, place string) error {
	base := r.afterSep()
	if err := r.dec.Decode(v); err != nil {
		return r.decodeError(err, place, base)
	}
	return nil
}

// decodeError turns an error of Decode into an *Error at place; base is the
// offset its view of the input starts at.
func (r *jsonReader) decodeError(err error, place string, base int64) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			place += "." + te.Field
		}
		// te.Offset is just after the offending value: point at its end.
		off := max(base+te.Offset-1, r.skipSpace(base))
		return (&Error{Place: place, Msg: fmt.Sprintf("cannot use %s as %s", te.Value, typeDesc(te.Type)), Err: err}).atOffset(off)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return (&Error{Place: place, Msg: msg, Err: err}).atOffset(r.skipSpace(base))
}

// typeDesc names a Go type in the schema's terms.
func typeDesc(t reflect.Type) string {
	if t == nil {
		return "this field"
	}
	switch t {
	case reflect.TypeFor[jsonFactor]():
		return "an object (a factor)"
	case reflect.TypeFor[jfloat]():
		return "a number"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeDesc(t.Elem()), "an "), "a ") + "s"
	case reflect.Pointer:
		return typeDesc(t.Elem())
	}
	return t.String()
}

// openArray consumes the opening bracket of an array (null has been
// handled by the caller).
func (r *jsonReader) openArray(place string) error {
	start := r.next()
	tok, err := r.dec.Token()
	if err != nil {
		return (&Error{Place: place, Msg: err.Error(), Err: err}).atOffset(start)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return placeErr(place, "want an array, found %s", tokenDesc(tok)).atOffset(start)
	}
	return nil
}

func tokenDesc(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "string " + quote(t)
	case float64:
		return "number " + strconv.FormatFloat(t, 'g', -1, 64)
	case bool:
		return "a boolean"
	}
	return "null"
}

// close consumes a closing delimiter.
func (r *jsonReader) close(place string) error {
	if _, err := r.dec.Token(); err != nil {
		return placeErr(place, "%v", err)
	}
	return nil
}

func (r *jsonReader) document() error {
	start := r.next()
	tok, err := r.dec.Token()
	if err != nil {
		return (&Error{Msg: err.Error(), Err: err}).atOffset(start)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return placeErr("", "the document is %s, want an object", tokenDesc(tok)).atOffset(start)
	}
	seen := map[string]bool{}
	for r.dec.More() {
		start := r.next()
		tok, err := r.dec.Token()
		if err != nil {
			return (&Error{Msg: err.Error(), Err: err}).atOffset(start)
		}
		key, _ := tok.(string) // valid JSON: object keys are strings
		if seen[key] {
			return placeErr(key, "repeated field").atOffset(start)
		}
		seen[key] = true
		if err := r.field(key, start); err != nil {
			return err
		}
	}
	return r.close("") // json.Valid has ruled out data after the document
}

func (r *jsonReader) field(key string, start int64) error {
	raw := r.raw
	if !isField(key) {
		return placeErr("", "unknown field %s", quote(key)).atOffset(start)
	}
	if pos := r.next(); pos < int64(len(r.data)) && r.data[pos] == 'n' {
		_, err := r.dec.Token() // null: the field is absent
		return err
	}
	switch key {
	case "format":
		raw.hasFormat = true
		return r.decode(&raw.format, key)
	case "version":
		raw.hasVersion = true
		return r.decode(&raw.version, key)
	case "cards":
		raw.hasCards = true
		return r.decode(&raw.cards, key)
	case "constant":
		raw.constPos = r.next()
		var c jfloat
		err := r.decode(&c, key)
		raw.constant = float64(c)
		return err
	case "unaries":
		return r.unaries()
	case "factors":
		return r.factors()
	}
	return nil
}

func isField(key string) bool {
	for _, k := range topKeys {
		if k == key {
			return true
		}
	}
	return false
}

func (r *jsonReader) unaries() error {
	if err := r.openArray("unaries"); err != nil {
		return err
	}
	raw := r.raw
	raw.hasUnaries = true
	var vec []jfloat
	for i := 0; r.dec.More(); i++ {
		pos := r.next()
		vec = vec[:0]
		isNull := pos < int64(len(r.data)) && r.data[pos] == 'n'
		if err := r.decode(&vec, fmt.Sprintf("unaries[%d]", i)); err != nil {
			return err
		}
		u := rawVec{span: span{off: len(raw.ufloats), n: len(vec), ok: !isNull}, pos: pos}
		reserve(&raw.ufloats, len(vec), 0)
		for _, v := range vec {
			raw.ufloats = append(raw.ufloats, float64(v))
		}
		raw.unaries = append(raw.unaries, u)
	}
	return r.close("unaries")
}

func (r *jsonReader) factors() error {
	if err := r.openArray("factors"); err != nil {
		return err
	}
	raw := r.raw
	for a := 0; r.dec.More(); a++ {
		pos := r.next()
		var jf jsonFactor
		if err := r.decode(&jf, fmt.Sprintf("factors[%d]", a)); err != nil {
			return err
		}
		rf := rawFactor{pos: pos}
		if jf.Kind != nil {
			rf.hasKind = true
			rf.kind, rf.kindOK = kindByName(*jf.Kind)
			if !rf.kindOK {
				rf.kindName = *jf.Kind
			}
		}
		if jf.Vars != nil {
			rf.vars = span{off: len(raw.vars), n: len(jf.Vars), ok: true}
			reserve(&raw.vars, len(jf.Vars), 0)
			raw.vars = append(raw.vars, jf.Vars...)
		}
		if jf.Negated != nil {
			rf.negated = span{off: len(raw.negs), n: len(jf.Negated), ok: true}
			reserve(&raw.negs, len(jf.Negated), 0)
			raw.negs = append(raw.negs, jf.Negated...)
		}
		if jf.Table != nil {
			rf.table = r.floats(jf.Table)
		}
		if jf.Emission != nil {
			rf.emission = r.floats(jf.Emission)
		}
		if jf.Weight != nil {
			rf.hasWeight, rf.weight = true, float64(*jf.Weight)
		}
		if jf.Budget != nil {
			rf.hasBudget, rf.budget = true, int64(*jf.Budget)
		}
		if jf.Trunc != nil {
			rf.hasTrunc, rf.trunc = true, float64(*jf.Trunc)
		}
		raw.factors = append(raw.factors, rf)
	}
	return r.close("factors")
}

// floats appends vs to the tables arena and returns their span.
func (r *jsonReader) floats(vs []jfloat) span {
	raw := r.raw
	sp := span{off: len(raw.tables), n: len(vs), ok: true}
	reserve(&raw.tables, len(vs), 0)
	for _, v := range vs {
		raw.tables = append(raw.tables, float64(v))
	}
	return sp
}
