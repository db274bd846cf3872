package native

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// modelSource streams a model held in memory.
type modelSource struct{ m *model.Model }

func (s modelSource) NumVars() int      { return len(s.m.Cards) }
func (s modelSource) Card(i int) int    { return s.m.Cards[i] }
func (s modelSource) NumFactors() int   { return len(s.m.Factors) }
func (s modelSource) Constant() float64 { return s.m.Constant }
func (s modelSource) EachUnaries(fn func(int, []float64)) {
	for i := range s.m.Cards {
		fn(i, s.m.Unaries(i))
	}
}
func (s modelSource) EachFactor(fn func(int, *model.Factor)) {
	for a := range s.m.Factors {
		fn(a, &s.m.Factors[a])
	}
}

func TestWriteStreamSameBytes(t *testing.T) {
	models := []*model.Model{allKinds(), gridModel(3, 4, 3, false), gridModel(2, 2, 2, true), model.New([]int{2, 3}), model.New(nil)}
	for _, sm := range sequenceModels() {
		models = append(models, sm.m)
	}
	for k, m := range models {
		for _, f := range []Format{JSON, Msgpack} {
			var want, got bytes.Buffer
			if err := Write(&want, m, f); err != nil {
				t.Fatal(err)
			}
			last, total := int64(-1), int64(-2)
			if err := WriteStream(&got, modelSource{m}, f, func(d, n int64) { last, total = d, n }); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("model %d, %v: streamed bytes differ from Write's", k, f)
			}
			if last != total && len(m.Cards)+len(m.Factors) > 0 {
				t.Errorf("model %d: progress ended at %d of %d", k, last, total)
			}
		}
	}
}

func TestWriteStreamErrors(t *testing.T) {
	twice := model.New([]int{2, 2})
	twice.Factors = []model.Factor{{Kind: model.Potts, Vars: []int{1, 1}, Weight: 1}}
	nan := model.New([]int{2})
	nan.Unary[1] = math.NaN()
	inf := model.New([]int{2})
	inf.Constant = math.Inf(1)
	for _, c := range []struct {
		m    *model.Model
		want string
	}{{twice, "appears twice"}, {nan, "variable 0 state 1"}, {inf, "constant"}} {
		for _, f := range []Format{JSON, Msgpack} {
			err := WriteStream(&bytes.Buffer{}, modelSource{c.m}, f, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, c.want)
			}
		}
	}
}
