package native

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

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
			if err := WriteStream(&got, model.SourceOf(m), f, func(d, n int64) { last, total = d, n }); err != nil {
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
			err := WriteStream(&bytes.Buffer{}, model.SourceOf(c.m), f, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, c.want)
			}
		}
	}
}
