package dsearch

import (
	"fmt"
	"math"
	"os"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// ground is the model as a search's coordinator checks what workers send
// against it: the number of variables, a variable's cardinality (a
// clamp's state must be below it) and an assignment's score, an error when
// the assignment is not one of the model (its length, a state out of
// range). onModel holds the model (Run); onFile reads an indexed file
// every worker reads too (RunFile), holding nothing per variable or per
// factor.
type ground interface {
	numVars() int
	card(v int) (int, error)
	score(x []int) (float64, error)
}

type modelGround struct{ m *model.Model }

func onModel(m *model.Model) ground { return modelGround{m} }

func (g modelGround) numVars() int { return g.m.NumVars() }

func (g modelGround) card(v int) (int, error) {
	if v < 0 || v >= g.m.NumVars() {
		return 0, fmt.Errorf("variable %d out of range [0, %d)", v, g.m.NumVars())
	}
	return g.m.Cards[v], nil
}

func (g modelGround) score(x []int) (float64, error) {
	if len(x) != g.m.NumVars() {
		return 0, fmt.Errorf("assignment of %d variables, model has %d", len(x), g.m.NumVars())
	}
	for i, s := range x {
		if s < 0 || s >= g.m.Cards[i] {
			return 0, fmt.Errorf("variable %d in state %d of %d", i, s, g.m.Cards[i])
		}
	}
	return g.m.Score(x), nil
}

// maxCards bounds the cardinalities a fileGround keeps looked up (those of
// clamped variables: a search clamps few of them).
const maxCards = 1 << 16

// fileGround is an indexed model file (indexed.Scanner): a cardinality
// is one 4-byte read (kept, up to maxCards), a score one streaming pass
// over the file (Scanner.Score), which the coordinator makes for the
// seed and for each answer whose assignment beats the incumbent.
type fileGround struct {
	f     *os.File
	s     *indexed.Scanner
	cards map[int]int
}

// openFile opens the indexed model at path, checking its header, trailer
// and block index (indexed.OpenScan), and its structure's checksum by a
// first streaming pass (the score of no assignment: a Walk).
func openFile(path string, maxEntries int) (*fileGround, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := indexed.OpenScan(f, st.Size(), path, indexed.ReadOptions{MaxEntries: maxEntries})
	if err == nil {
		err = s.Walk(indexed.Visitor{}) // verifies the structure's checksum
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileGround{f: f, s: s, cards: map[int]int{}}, nil
}

func (g *fileGround) close() error { return g.f.Close() }

func (g *fileGround) numVars() int { return g.s.NumVars() }

func (g *fileGround) card(v int) (int, error) {
	if c, ok := g.cards[v]; ok {
		return c, nil
	}
	c, err := g.s.Card(v)
	if err != nil {
		return 0, err
	}
	if len(g.cards) >= maxCards {
		clear(g.cards)
	}
	g.cards[v] = c
	return c, nil
}

func (g *fileGround) score(x []int) (float64, error) {
	sc, err := g.s.Score(x)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(sc) {
		return 0, fmt.Errorf("assignment scores NaN")
	}
	return sc, nil
}
