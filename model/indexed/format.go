package indexed

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/ddrun/ddrun/model"
)

// Version is the format version that this package writes and reads.
const Version = 1

// Ext is the indexed format's file extension.
const Ext = ".ddx"

// DefaultBlockSize is the payload bytes covered by one checksum.
const DefaultBlockSize = 64 << 10

// Bounds on a block's size (a multiple of 8, so that no float64 of the
// payload straddles two blocks).
const (
	MinBlockSize = 512
	MaxBlockSize = 64 << 20
)

const (
	headerMagic  = "DDRUNIDX"
	trailerMagic = "DDXTRAIL"
	headerSize   = 16
	trailerSize  = 96
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// trailer is the file's last trailerSize bytes: where the sections lie and
// their checksums.
type trailer struct {
	payloadOff, payloadLen uint64
	structOff, structLen   uint64
	indexOff, blocks       uint64
	nvars, nfactors        uint64
	structCRC, indexCRC    uint32
	blockSize, version     uint32
}

func (t *trailer) encode() []byte {
	b := make([]byte, trailerSize)
	le := binary.LittleEndian
	for i, v := range []uint64{t.payloadOff, t.payloadLen, t.structOff, t.structLen, t.indexOff, t.blocks, t.nvars, t.nfactors} {
		le.PutUint64(b[8*i:], v)
	}
	le.PutUint32(b[64:], t.structCRC)
	le.PutUint32(b[68:], t.indexCRC)
	le.PutUint32(b[72:], t.blockSize)
	le.PutUint32(b[76:], t.version)
	le.PutUint32(b[80:], crc32.Checksum(b[:80], castagnoli))
	copy(b[88:], trailerMagic)
	return b
}

func decodeTrailer(b []byte) (trailer, string) {
	var t trailer
	if string(b[88:]) != trailerMagic {
		return t, "no trailer (torn or not an indexed model file)"
	}
	le := binary.LittleEndian
	if le.Uint32(b[80:]) != crc32.Checksum(b[:80], castagnoli) {
		return t, "trailer checksum mismatch (corrupt file)"
	}
	if le.Uint32(b[84:]) != 0 {
		return t, "trailer: reserved field is not zero"
	}
	vs := []*uint64{&t.payloadOff, &t.payloadLen, &t.structOff, &t.structLen, &t.indexOff, &t.blocks, &t.nvars, &t.nfactors}
	for i, p := range vs {
		*p = le.Uint64(b[8*i:])
	}
	t.structCRC, t.indexCRC = le.Uint32(b[64:]), le.Uint32(b[68:])
	t.blockSize, t.version = le.Uint32(b[72:]), le.Uint32(b[76:])
	return t, ""
}

func validBlockSize(bs int64) bool {
	return bs >= MinBlockSize && bs <= MaxBlockSize && bs%8 == 0
}

// badValue describes a log-potential that a table, emission or unary may
// not hold (NaN, +Inf), or returns "". It is inlined: the loops over
// every value call it.
func badValue(v float64) string {
	if v != v || v > math.MaxFloat64 { // NaN, +Inf
		return describe(v)
	}
	return ""
}

// describe is badValue's message, kept out of line so that badValue is
// inlined.
//
//go:noinline
func describe(v float64) string { return fmt.Sprint(v) }

// maxPairwise is the largest scope that scopeCards checks for repeats pair
// by pair; a larger one is sorted (a copy), so that no check needs an
// array over all the variables.
const maxPairwise = 16

// scratch is the reusable memory of the factor checks.
type scratch struct {
	cards, sorted []int
}

// checkFactor checks a factor without its payload: kind, scope (range, no
// repeats), the cardinalities card gives its variables (>= 1), kind
// parameters, and that table and emission (entry counts) fit the scope. It
// returns a message, or "".
func checkFactor(f *model.Factor, nvars int, card func(v int) int, table, emission int, scr *scratch) string {
	if f.Kind > model.TruncQuad {
		return fmt.Sprintf("unknown kind %d", f.Kind)
	}
	cards, msg := scopeCards(f.Vars, nvars, card, scr)
	if msg != "" {
		return msg
	}
	return checkShape(f, cards, table, emission)
}

// scopeCards checks a scope against nvars variables (range, no repeats)
// and returns its variables' cardinalities, in scr's memory.
func scopeCards(vars []int, nvars int, card func(v int) int, scr *scratch) ([]int, string) {
	cards := scr.cards[:0]
	for k, v := range vars {
		if v < 0 || v >= nvars {
			return nil, fmt.Sprintf("scope entry %d: variable %d out of range [0,%d)", k, v, nvars)
		}
		if len(vars) <= maxPairwise && slices.Contains(vars[:k], v) {
			return nil, fmt.Sprintf("variable %d appears twice in the scope", v)
		}
		c := card(v)
		if c < 1 || c > math.MaxUint32 {
			return nil, fmt.Sprintf("variable %d: cardinality %d outside [1,%d]", v, c, uint32(math.MaxUint32))
		}
		cards = append(cards, c)
	}
	scr.cards = cards
	if len(vars) > maxPairwise {
		s := append(scr.sorted[:0], vars...)
		slices.Sort(s)
		scr.sorted = s
		for k := 1; k < len(s); k++ {
			if s[k] == s[k-1] {
				return nil, fmt.Sprintf("variable %d appears twice in the scope", s[k])
			}
		}
	}
	return cards, ""
}

// checkShape checks a factor whose scope has cardinalities cards (in
// range, >= 1): kind parameters, and that table and emission (entry
// counts) fit the scope. It returns a message, or "".
func checkShape(f *model.Factor, cards []int, table, emission int) string {
	if f.Kind != model.Dense && f.Kind != model.Sequence && (table != 0 || emission != 0) {
		return fmt.Sprintf("a %s factor has no payload, it declares %d entries", f.Kind, table+emission)
	}
	n := len(cards)
	switch f.Kind {
	case model.Dense:
		size := 1
		for _, c := range cards {
			if size > model.MaxTableEntries/c {
				return fmt.Sprintf("table over %d variables has more than %d entries", n, model.MaxTableEntries)
			}
			size *= c
		}
		if emission != 0 || table != size {
			return fmt.Sprintf("table has %d entries, scope needs %d", table+emission, size)
		}
	case model.Sequence:
		return checkSequence(cards, table, emission)
	case model.Pair, model.Potts, model.TruncLinear, model.TruncQuad:
		if n != 2 {
			return fmt.Sprintf("needs 2 variables, has %d", n)
		}
		if f.Kind == model.Pair && (cards[0] != 2 || cards[1] != 2) {
			return "variables must be binary"
		}
		if f.Kind != model.Pair && cards[0] != cards[1] {
			return fmt.Sprintf("cardinalities differ (%d, %d)", cards[0], cards[1])
		}
		if err := model.CheckPairTerm(f.Kind, f.Weight, f.Trunc); err != nil {
			return err.Error()
		}
	default: // logic
		return checkLogic(f, cards)
	}
	return ""
}

func checkSequence(cards []int, table, emission int) string {
	n := len(cards)
	if n < 2 {
		return fmt.Sprintf("needs at least 2 variables, has %d", n)
	}
	c0, same, sum, total := cards[0], true, 0, 0
	for k, c := range cards {
		same = same && c == c0
		sum += c
		if k+1 < n {
			if c > model.MaxTableEntries/cards[k+1] {
				return fmt.Sprintf("transition tables have more than %d entries", model.MaxTableEntries)
			}
			total += c * cards[k+1]
			if total > model.MaxTableEntries {
				return fmt.Sprintf("transition tables have more than %d entries", model.MaxTableEntries)
			}
		}
	}
	if table != total && !(same && n > 2 && table == c0*c0) {
		return fmt.Sprintf("transitions have %d entries, want %d (per position) or, with equal cardinalities and 3 or more variables, %d (shared)", table, total, c0*c0)
	}
	if emission != 0 && emission != sum {
		return fmt.Sprintf("emission has %d entries, scope needs %d", emission, sum)
	}
	return ""
}

func checkLogic(f *model.Factor, cards []int) string {
	n := len(cards)
	min := 1
	if f.Kind == model.OROut || f.Kind == model.ANDOut {
		min = 2
	}
	if n < min {
		return fmt.Sprintf("needs at least %d variables, has %d", min, n)
	}
	for k, c := range cards {
		if c != 2 {
			return fmt.Sprintf("variable %d has cardinality %d, logic factors need binary variables", f.Vars[k], c)
		}
	}
	if neg := f.NegatedInputs(); neg != nil && len(neg) != n {
		return fmt.Sprintf("negated has %d entries for %d variables", len(neg), n)
	}
	if b := f.BudgetBound(); f.Kind == model.Budget && (b < 0 || b > n) {
		return fmt.Sprintf("budget %d outside [0,%d]", b, n)
	}
	return ""
}
