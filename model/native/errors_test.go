package native

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/vmihailenco/msgpack/v5"
)

// doc wraps factors (a JSON array's elements) in a valid header over cards.
func doc(cards, factors string) string {
	return `{"format": "ddrun-model", "version": 1, "cards": [` + cards + `], "factors": [` + factors + `]}`
}

type errCase struct {
	name        string
	json        string
	place, msg  string // expected *Error place and message fragment
	mpPlace     string // msgpack place when it differs ("": same)
	mpMsg       string // msgpack message fragment when it differs
	jsonOnly    bool   // not expressible through the JSON-to-msgpack conversion
	wantLineCol string // JSON "line:col" when checked
}

var errCases = []errCase{
	// Header.
	{name: "wrong format", json: `{"format": "other", "version": 1, "cards": []}`, place: "format", msg: `"other", want "ddrun-model"`},
	{name: "missing format", json: `{"version": 1, "cards": []}`, msg: `missing field "format"`},
	{name: "null format", json: `{"format": null, "version": 1, "cards": []}`, msg: `missing field "format"`},
	{name: "wrong version", json: `{"format": "ddrun-model", "version": 2, "cards": []}`, place: "version", msg: "2 is not supported"},
	{name: "missing version", json: `{"format": "ddrun-model", "cards": []}`, msg: `missing field "version"`},
	{name: "fractional version", json: `{"format": "ddrun-model", "version": 1.5, "cards": []}`, place: "version", msg: "cannot use number 1.5 as an integer", mpMsg: "want an integer, found a float", wantLineCol: "1:40"},
	{name: "missing cards", json: `{"format": "ddrun-model", "version": 1}`, msg: `missing field "cards"`},
	{name: "cards not an array", json: `{"format": "ddrun-model", "version": 1, "cards": "x"}`, place: "cards", msg: "cannot use string as an array of integers", mpMsg: "want an array, found a string"},
	{name: "zero cardinality", json: doc("2, 0", ""), place: "cards[1]", msg: "cardinality 0 < 1"},
	{name: "huge cardinality", json: doc("2, 1099511627776", ""), place: "cards[1]", msg: "brings the states (unary entries) over the limit of 268435456"},
	{name: "states over the limit", json: doc("134217728, 134217728, 2", `{"kind": "potts", "vars": [0, 1], "weight": 1}`), place: "cards[2]", msg: "brings the states (unary entries) over the limit of 268435456"},
	// 56 bytes that would have claimed 2 GiB of unaries.
	{name: "huge free variable", json: `{"format":"ddrun-model","version":1,"cards":[268435456]}`, place: "cards[0]", msg: "variable 0 is in no factor and has no unaries; the 1 such variables have 268435456 states, more than 1048576"},
	{name: "unknown field", json: `{"format": "ddrun-model", "version": 1, "cards": [], "extra": 1}`, msg: `unknown field "extra"`},
	{name: "repeated field", json: `{"format": "ddrun-model", "version": 1, "version": 1, "cards": []}`, place: "version", msg: "repeated field", jsonOnly: true},
	{name: "not an object", json: `[1, 2]`, msg: "the document is an array, want an object", mpMsg: "want a map, found an array"},
	{name: "trailing data", json: `{"format": "ddrun-model", "version": 1, "cards": []} {}`, msg: "invalid character '{' after top-level value", jsonOnly: true, wantLineCol: "1:54"},
	{name: "syntax error", json: "{\n  \"format\": \"ddrun-model\",\n  \"version\": 1,,\n}", msg: "syntax error", jsonOnly: true, wantLineCol: "3:16"},
	{name: "truncated", json: "{\n  \"format\": \"ddrun-model\"", msg: "unexpected end of JSON input", jsonOnly: true, wantLineCol: "2:26"},
	{name: "empty", json: "", msg: "unexpected end of JSON input", jsonOnly: true, wantLineCol: "1:1"},

	// Unaries and constant.
	{name: "unaries count", json: `{"format": "ddrun-model", "version": 1, "cards": [2, 2], "unaries": [[0, 1]]}`, place: "unaries", msg: "1 entries, model has 2 variables"},
	{name: "unaries length", json: `{"format": "ddrun-model", "version": 1, "cards": [2, 2], "unaries": [[0, 1], [0, 1, 2]]}`, place: "unaries[1]", msg: "3 entries, variable 1 has cardinality 2"},
	{name: "unary NaN", json: `{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [[0, "NaN"]]}`, place: "unaries[0][1]", msg: "NaN is not allowed"},
	{name: "unary +Inf", json: `{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [["inf", 0]]}`, place: "unaries[0][0]", msg: "+Inf is not allowed"},
	{name: "unary string", json: `{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [[0, "zero"]]}`, place: "unaries[0][1]", msg: "not a number"},
	{name: "unary overflow", json: `{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [[0, 1e999]]}`, place: "unaries[0][1]", msg: "not a number", jsonOnly: true},
	{name: "unaries not arrays", json: `{"format": "ddrun-model", "version": 1, "cards": [2], "unaries": [5]}`, place: "unaries[0]", msg: "cannot use number as an array of numbers", mpMsg: "want an array, found an integer"},
	{name: "constant -inf", json: `{"format": "ddrun-model", "version": 1, "cards": [], "constant": "-inf"}`, place: "constant", msg: "-Inf is not finite"},

	// Factors: kind and fields.
	{name: "unknown kind", json: doc("2", `{"kind": "nand", "vars": [0]}`), place: "factors[0]", msg: `unknown kind "nand"`},
	{name: "missing kind", json: doc("2", `{"vars": [0]}`), place: "factors[0]", msg: `missing field "kind"`},
	{name: "unknown factor field", json: doc("2", `{"kind": "or", "vars": [0], "colour": "red"}`), place: "factors[0]", msg: `unknown field "colour"`},
	{name: "factor not an object", json: doc("2", `{"kind": "or", "vars": [0]}, 7`), place: "factors[1]", msg: "cannot use number as an object", mpMsg: "want a map, found an integer"},
	{name: "missing vars", json: doc("2", `{"kind": "xor"}`), place: "factors[0] (xor)", msg: `missing field "vars"`},
	{name: "vars of strings", json: doc("2", `{"kind": "xor", "vars": ["a"]}`), place: "factors[0].vars", msg: "cannot use string as an integer", mpPlace: "factors[0].vars[0]", mpMsg: "want an integer, found a string"},
	{name: "var out of range", json: doc("2, 2, 2", `{"kind": "or", "vars": [0, 1]}, {"kind": "or", "vars": [2, 5]}`), place: "factors[1].vars[1]", msg: "variable 5 out of range [0,3)"},
	{name: "negative var", json: doc("2", `{"kind": "or", "vars": [-1]}`), place: "factors[0].vars[0]", msg: "variable -1 out of range"},
	{name: "repeated var", json: doc("2, 2", `{"kind": "or", "vars": [1, 0, 1]}`), place: "factors[0].vars", msg: "variable 1 appears twice"},
	{name: "table on xor", json: doc("2, 2", `{"kind": "xor", "vars": [0, 1], "table": [1, 2, 3, 4]}`), place: "factors[0] (xor)", msg: `field "table" does not belong to kind xor`},
	{name: "weight on dense", json: doc("2", `{"kind": "dense", "vars": [0], "table": [1, 2], "weight": 1}`), place: "factors[0] (dense)", msg: `field "weight" does not belong to kind dense`},
	{name: "negated on potts", json: doc("2, 2", `{"kind": "potts", "vars": [0, 1], "weight": 1, "negated": [true, false]}`), place: "factors[0] (potts)", msg: `field "negated" does not belong to kind potts`},
	{name: "budget on or", json: doc("2", `{"kind": "or", "vars": [0], "budget": 1}`), place: "factors[0] (or)", msg: `field "budget" does not belong to kind or`},
	{name: "emission on dense", json: doc("2", `{"kind": "dense", "vars": [0], "table": [1, 2], "emission": [0, 0]}`), place: "factors[0] (dense)", msg: `field "emission" does not belong to kind dense`},
	{name: "emission on potts", json: doc("2, 2", `{"kind": "potts", "vars": [0, 1], "weight": 1, "emission": [0, 0, 0, 0]}`), place: "factors[0] (potts)", msg: `field "emission" does not belong to kind potts`},
	{name: "emission on xor", json: doc("2, 2", `{"kind": "xor", "vars": [0, 1], "emission": []}`), place: "factors[0] (xor)", msg: `field "emission" does not belong to kind xor`},
	{name: "weight on sequence", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [1, 2, 3, 4], "weight": 1}`), place: "factors[0] (sequence)", msg: `field "weight" does not belong to kind sequence`},
	{name: "negated on sequence", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [1, 2, 3, 4], "negated": [true, false]}`), place: "factors[0] (sequence)", msg: `field "negated" does not belong to kind sequence`},
	{name: "budget on sequence", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [1, 2, 3, 4], "budget": 1}`), place: "factors[0] (sequence)", msg: `field "budget" does not belong to kind sequence`},

	// Dense.
	{name: "dense missing table", json: doc("2", `{"kind": "dense", "vars": [0]}`), place: "factors[0] (dense)", msg: `missing field "table"`},
	{name: "dense table size", json: doc("2, 2, 2", `{"kind": "or", "vars": [0]}, {"kind": "or", "vars": [0]}, {"kind": "dense", "vars": [0, 2], "table": [1, 2, 3, 4, 5, 6]}`), place: "factors[2].table", msg: "6 entries, scope needs 4"},
	{name: "dense table NaN", json: doc("2", `{"kind": "dense", "vars": [0], "table": [0, "nan"]}`), place: "factors[0].table[1]", msg: "NaN is not allowed"},
	{name: "dense table +inf", json: doc("2", `{"kind": "dense", "vars": [0], "table": ["+Infinity", 0]}`), place: "factors[0].table[0]", msg: "+Inf is not allowed"},
	{name: "dense table null", json: doc("2", `{"kind": "dense", "vars": [0], "table": [0, null]}`), place: "factors[0].table[1]", msg: "not a number"},
	{name: "dense table too big", json: doc("32768, 32768", `{"kind": "dense", "vars": [0, 1], "table": []}`), place: "factors[0] (dense)", msg: "more than 268435456 entries"},

	// Sequence.
	{name: "sequence missing table", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "emission": [0, 0, 0, 0]}`), place: "factors[0] (sequence)", msg: `missing field "table"`},
	{name: "sequence null table", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": null}`), place: "factors[0] (sequence)", msg: `missing field "table"`},
	{name: "sequence missing vars", json: doc("2, 2", `{"kind": "sequence", "table": [1, 2, 3, 4]}`), place: "factors[0] (sequence)", msg: `missing field "vars"`},
	{name: "sequence one var", json: doc("2", `{"kind": "sequence", "vars": [0], "table": [1, 2, 3, 4]}`), place: "factors[0] (sequence)", msg: "needs at least 2 variables, has 1"},
	{name: "sequence no vars", json: doc("2", `{"kind": "sequence", "vars": [], "table": []}`), place: "factors[0] (sequence)", msg: "needs at least 2 variables, has 0"},
	{name: "sequence repeated var", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1, 0], "table": [1, 2, 3, 4]}`), place: "factors[0].vars", msg: "variable 0 appears twice"},
	{name: "sequence transitions size", json: "{\n  \"format\": \"ddrun-model\",\n  \"version\": 1,\n  \"cards\": [2, 2, 2, 2],\n  \"factors\": [\n    {\"kind\": \"or\", \"vars\": [0]}, {\"kind\": \"or\", \"vars\": [1]},\n    {\"kind\": \"sequence\", \"vars\": [0, 1, 2, 3], \"table\": [1, 2, 3, 4, 5, 6, 7]}\n  ]\n}", place: "factors[2] (sequence)", msg: "transitions have 7 entries, want 4 (shared) or 12 (per position)", wantLineCol: "7:5"},
	{name: "sequence per-position size", json: doc("2, 3, 2", `{"kind": "sequence", "vars": [0, 1, 2], "table": [1, 2, 3, 4]}`), place: "factors[0] (sequence)", msg: "transitions have 4 entries, want 12 (per position)"},
	{name: "sequence two vars size", json: doc("3, 3", `{"kind": "sequence", "vars": [1, 0], "table": [1, 2, 3]}`), place: "factors[0] (sequence)", msg: "transitions have 3 entries, want 9"},
	{name: "sequence shared needs 3 vars", json: doc("2, 3", `{"kind": "sequence", "vars": [0, 1], "table": [1, 2, 3, 4]}`), place: "factors[0] (sequence)", msg: "transitions have 4 entries, want 6 (per position)"},
	{name: "sequence transitions too big", json: doc("32768, 32768", `{"kind": "sequence", "vars": [0, 1], "table": []}`), place: "factors[0] (sequence)", msg: "transition tables have more than 268435456 entries"},
	{name: "sequence transition NaN", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, "nan", 0, 0]}`), place: "factors[0].table[1]", msg: "NaN is not allowed"},
	{name: "sequence transition +inf", json: doc("2, 2, 2", `{"kind": "sequence", "vars": [2, 1, 0], "table": [0, 0, 0, "Infinity"]}`), place: "factors[0].table[3]", msg: "+Inf is not allowed"},
	{name: "sequence transition string", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": ["heavy", 0, 0, 0]}`), place: "factors[0].table[0]", msg: "not a number"},
	{name: "sequence transition overflow", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, -1e999, 0]}`), place: "factors[0].table[2]", msg: "not a number", jsonOnly: true},
	{name: "sequence table not an array", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": 5}`), place: "factors[0].table", msg: "cannot use number as an array of numbers", mpMsg: "want an array, found an integer"},
	{name: "emission size", json: doc("2, 3", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0, 0, 0], "emission": [0, 0, 0, 0]}`), place: "factors[0].emission", msg: "4 entries, scope needs 5"},
	{name: "emission empty", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": []}`), place: "factors[0].emission", msg: "0 entries, scope needs 4"},
	{name: "emission NaN", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": [0, 0, "NaN", 0]}`), place: "factors[0].emission[2]", msg: "NaN is not allowed"},
	{name: "emission +inf", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": ["+Infinity", 0, 0, 0]}`), place: "factors[0].emission[0]", msg: "+Inf is not allowed"},
	{name: "emission null entry", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": [0, null, 0, 0]}`), place: "factors[0].emission[1]", msg: "not a number"},
	{name: "emission boolean", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": [0, 0, 0, true]}`), place: "factors[0].emission[3]", msg: "not a number", mpMsg: "want a number, found a boolean"},
	{name: "emission overflow", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": [0, 1e999, 0, 0]}`), place: "factors[0].emission[1]", msg: "not a number", jsonOnly: true},
	{name: "emission not an array", json: doc("2, 2", `{"kind": "sequence", "vars": [0, 1], "table": [0, 0, 0, 0], "emission": 5}`), place: "factors[0].emission", msg: "cannot use number as an array of numbers", mpMsg: "want an array, found an integer"},

	// Pair and Potts.
	{name: "factor line", json: "{\n  \"format\": \"ddrun-model\", \"version\": 1, \"cards\": [2, 2],\n  \"factors\": [\n    {\"kind\": \"or\", \"vars\": [0]},\n    {\"kind\": \"potts\", \"vars\": [0, 1], \"weight\": \"nan\"}\n  ]\n}", place: "factors[1] (potts)", msg: "weight NaN is not finite", wantLineCol: "5:5"},
	{name: "potts weight NaN", json: doc("2, 2", `{"kind": "potts", "vars": [0, 1], "weight": "NaN"}`), place: "factors[0] (potts)", msg: "weight NaN is not finite"},
	{name: "pair weight -inf", json: doc("2, 2", `{"kind": "pair", "vars": [0, 1], "weight": "-inf"}`), place: "factors[0] (pair)", msg: "weight -Inf is not finite"},
	{name: "pair weight string", json: doc("2, 2", `{"kind": "pair", "vars": [0, 1], "weight": "heavy"}`), place: "factors[0] (pair)", msg: "weight not-a-number value is not finite"},
	{name: "pair null weight", json: doc("2, 2", `{"kind": "pair", "vars": [0, 1], "weight": null}`), place: "factors[0] (pair)", msg: `missing field "weight"`},
	{name: "long unknown kind", json: doc("2", `{"kind": "`+strings.Repeat("x", 100)+`", "vars": [0]}`), place: "factors[0]", msg: `unknown kind "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"...`},
	{name: "pair missing weight", json: doc("2, 2", `{"kind": "pair", "vars": [0, 1]}`), place: "factors[0] (pair)", msg: `missing field "weight"`},
	{name: "pair not binary", json: doc("2, 3", `{"kind": "pair", "vars": [0, 1], "weight": 1}`), place: "factors[0] (pair)", msg: "variables must be binary"},
	{name: "potts cards differ", json: doc("2, 3", `{"kind": "potts", "vars": [0, 1], "weight": 1}`), place: "factors[0] (potts)", msg: "cardinalities differ (2, 3)"},
	{name: "pair arity", json: doc("2, 2, 2", `{"kind": "pair", "vars": [0, 1, 2], "weight": 1}`), place: "factors[0] (pair)", msg: "needs 2 variables, has 3"},

	// Truncated kinds.
	{name: "trunclinear missing trunc", json: doc("3, 3", `{"kind": "trunclinear", "vars": [0, 1], "weight": 1}`), place: "factors[0] (trunclinear)", msg: `missing field "trunc"`},
	{name: "truncquad zero trunc", json: doc("3, 3", `{"kind": "truncquad", "vars": [0, 1], "weight": 1, "trunc": 0}`), place: "factors[0] (truncquad)", msg: "truncation 0 is not finite and > 0"},
	{name: "truncquad trunc string", json: doc("3, 3", `{"kind": "truncquad", "vars": [0, 1], "weight": 1, "trunc": "far"}`), place: "factors[0] (truncquad)", msg: "truncation NaN is not finite and > 0"},
	{name: "trunclinear overflow", json: doc("3, 3", `{"kind": "trunclinear", "vars": [0, 1], "weight": 1e300, "trunc": 1e300}`), place: "factors[0] (trunclinear)", msg: "overflows"},
	{name: "trunclinear cards differ", json: doc("3, 2", `{"kind": "trunclinear", "vars": [0, 1], "weight": 1, "trunc": 2}`), place: "factors[0] (trunclinear)", msg: "cardinalities differ (3, 2)"},
	{name: "trunc on potts", json: doc("3, 3", `{"kind": "potts", "vars": [0, 1], "weight": 1, "trunc": 2}`), place: "factors[0] (potts)", msg: `field "trunc" does not belong to kind potts`},

	// Logic.
	{name: "logic not binary", json: doc("2, 3", `{"kind": "atmostone", "vars": [0, 1]}`), place: "factors[0] (atmostone)", msg: "variable 1 has cardinality 3, logic factors need binary variables"},
	{name: "orout arity", json: doc("2", `{"kind": "orout", "vars": [0]}`), place: "factors[0] (orout)", msg: "needs at least 2 variables, has 1"},
	{name: "or no vars", json: doc("2", `{"kind": "or", "vars": []}`), place: "factors[0] (or)", msg: "needs at least 1 variables, has 0"},
	{name: "negated length", json: doc("2, 2, 2", `{"kind": "andout", "vars": [0, 1, 2], "negated": [true, false]}`), place: "factors[0].negated", msg: "2 entries for 3 variables"},
	{name: "negated not bools", json: doc("2", `{"kind": "or", "vars": [0], "negated": [1]}`), place: "factors[0].negated", msg: "cannot use number as a boolean", mpPlace: "factors[0].negated[0]", mpMsg: "want a boolean, found an integer"},
	{name: "budget missing", json: doc("2, 2", `{"kind": "budget", "vars": [0, 1]}`), place: "factors[0] (budget)", msg: `missing field "budget"`},
	{name: "budget negative", json: doc("2, 2", `{"kind": "budget", "vars": [0, 1], "budget": -1}`), place: "factors[0] (budget)", msg: "budget -1 outside [0,2]"},
	{name: "budget too big", json: doc("2, 2", `{"kind": "budget", "vars": [0, 1], "budget": 3}`), place: "factors[0] (budget)", msg: "budget 3 outside [0,2]"},
}

// checkErr checks that err is a one-line *Error for file at place.
func checkErr(t *testing.T, err error, file, place, msg, lineCol string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want an error at %q: %s", place, msg)
	}
	s := err.Error()
	if strings.ContainsAny(s, "\r\n") {
		t.Errorf("error spans lines: %q", s)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q is a %T, want *Error", s, err)
	}
	if e.File != file || !strings.HasPrefix(s, file+":") {
		t.Errorf("error %q does not name the file %q", s, file)
	}
	if e.Place != place {
		t.Errorf("error %q: place %q, want %q", s, e.Place, place)
	}
	if place != "" && !strings.Contains(s, place+": ") {
		t.Errorf("error %q does not show the place %q", s, place)
	}
	if !strings.Contains(s, msg) {
		t.Errorf("error %q does not say %q", s, msg)
	}
	if lineCol != "" && !strings.HasPrefix(s, file+":"+lineCol+":") {
		t.Errorf("error %q is not at %s", s, lineCol)
	}
}

func TestReadJSONErrors(t *testing.T) {
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.json), "m.json", JSON)
			checkErr(t, err, "m.json", c.place, c.msg, c.wantLineCol)
			t.Log(err)
		})
	}
}

// toMsgpack converts a JSON document to msgpack as a general tool would:
// integers stay integers, other numbers become float64.
func toMsgpack(t testing.TB, js string) []byte {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("test document: %v", err)
	}
	data, err := msgpack.Marshal(convertNumbers(v))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = convertNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = convertNumbers(x[k])
		}
	}
	return v
}

func TestReadMsgpackErrors(t *testing.T) {
	for _, c := range errCases {
		if c.jsonOnly {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			place, msg := c.place, c.msg
			if c.mpPlace != "" {
				place = c.mpPlace
			}
			if c.mpMsg != "" {
				msg = c.mpMsg
			}
			_, err := Read(bytes.NewReader(toMsgpack(t, c.json)), "m.msgpack", Msgpack)
			checkErr(t, err, "m.msgpack", place, msg, "")
			t.Log(err)
		})
	}
}

// TestReadMsgpackMalformed feeds hand-made broken msgpack.
func TestReadMsgpackMalformed(t *testing.T) {
	header := func(extra ...byte) []byte {
		b := []byte{0x83, 0xa6}
		b = append(b, "format"...)
		b = append(b, 0xab)
		b = append(b, "ddrun-model"...)
		b = append(b, 0xa7)
		b = append(b, "version"...)
		b = append(b, 0x01, 0xa5)
		b = append(b, "cards"...)
		return append(b, extra...)
	}
	cases := []struct {
		name       string
		data       []byte
		place, msg string
	}{
		{"empty", nil, "", "the document: unexpected end of input"},
		{"truncated", header(), "cards", "unexpected end of input"},
		{"huge array", header(0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2), "cards", "an array of 4294967295 entries does not fit in the 2 bytes left"},
		{"huge string", []byte{0x81, 0xdb, 0xff, 0xff, 0xff, 0xff}, "", "string of 4294967295 bytes does not fit"},
		{"key not a string", []byte{0x81, 0x01, 0x01}, "", "map key: want a string, found an integer"},
		{"binary in cards", header(0x91, 0xc4, 0x01, 0x00), "cards[0]", "want an integer, found binary data"},
		{"uint64 too large", header(0x91, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "cards[0]", "integer 18446744073709551615 is too large"},
		{"trailing data", header(0x90, 0xc0), "", "1 bytes of data after the document"},
		{"repeated key", []byte{0x82, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01}, "version", "repeated field"},
		{"reserved code", []byte{0xc1}, "", "want a map, found the reserved code 0xc1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), "m.msgpack", Msgpack)
			checkErr(t, err, "m.msgpack", c.place, c.msg, "")
			t.Log(err)
		})
	}
}

func TestReadBadGzip(t *testing.T) {
	_, err := Read(bytes.NewReader([]byte{0x1f, 0x8b, 0x08, 0x00, 0x01}), "m.json.gz", JSON)
	if err == nil || !strings.HasPrefix(err.Error(), "m.json.gz: ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("corrupt gzip: %v", err)
	}
}

// TestReadMsgpackRepeatedFactorKey writes a sequence factor whose map
// repeats a key, which a general-purpose encoder cannot produce from a map.
func TestReadMsgpackRepeatedFactorKey(t *testing.T) {
	for _, key := range []string{"emission", "table"} {
		var b bytes.Buffer
		enc := msgpack.NewEncoder(&b)
		for _, v := range []any{
			"format", "ddrun-model", "version", 1, "cards", []int{2, 2}, "factors",
		} {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		data := append([]byte{0x84}, b.Bytes()...) // the document: 4 fields
		data = append(data, 0x91, 0x85)            // [ {5 fields
		b.Reset()
		zeros := []float64{0, 0, 0, 0}
		for _, v := range []any{"kind", "sequence", "vars", []int{0, 1}, "table", zeros, key, zeros, key, zeros} {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		data = append(data, b.Bytes()...)
		_, err := Read(bytes.NewReader(data), "m.msgpack", Msgpack)
		checkErr(t, err, "m.msgpack", "factors[0]."+key, "repeated field", "")
	}
}

// TestKindNames checks that the readers know every kind of package model by
// its name, and that lastKind is indeed the last one.
func TestKindNames(t *testing.T) {
	for k := model.Dense; k <= lastKind; k++ {
		if got, ok := kindByName(k.String()); !ok || got != k {
			t.Errorf("kindByName(%q) = %v, %v", k.String(), got, ok)
		}
	}
	if next := (lastKind + 1).String(); !strings.HasPrefix(next, "kind(") {
		t.Errorf("package model has a kind %q after lastKind; the readers do not know it", next)
	}
}
