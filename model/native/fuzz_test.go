package native

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// seedModels are valid models for the fuzz corpora: allKinds (every kind,
// sequences included), small ones, grids, and the sequence round-trip cases.
func seedModels() []*model.Model {
	small := model.New([]int{2, 2})
	small.Factors = []model.Factor{{Kind: model.Pair, Vars: []int{0, 1}, Weight: 1}}
	seeds := []*model.Model{allKinds(), small, model.New(nil), gridModel(3, 3, 3, false), gridModel(2, 3, 2, true)}
	for _, c := range sequenceModels() {
		seeds = append(seeds, c.m)
	}
	return seeds
}

// fuzzLimits caps the entries at 2^16 for fuzzing (a tiny input may
// otherwise ask for a 2 GiB model, legitimately but slowly).
var fuzzLimits = ReadOptions{MaxEntries: 1 << 16}

// checkAccepted checks a model that Read accepted: it validates and
// round-trips through both formats unchanged.
func checkAccepted(t *testing.T, m *model.Model) {
	if err := m.Validate(); err != nil {
		t.Fatalf("accepted model does not validate: %v", err)
	}
	for _, f := range []Format{JSON, Msgpack} {
		if d := diffModels(m, roundTrip(t, m, f)); d != "" {
			t.Fatalf("%v round trip changed the %s", f, d)
		}
	}
}

func checkRejected(t *testing.T, err error, name string) {
	s := err.Error()
	if strings.ContainsAny(s, "\r\n") {
		t.Fatalf("error spans lines: %q", s)
	}
	if !strings.HasPrefix(s, name+":") {
		t.Fatalf("error does not name the file: %q", s)
	}
}

func FuzzReadJSON(f *testing.F) {
	for _, m := range seedModels() {
		var b bytes.Buffer
		if err := Write(&b, m, JSON); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	if data, err := os.ReadFile(filepath.Join("..", "..", "examples", "logic-small.json")); err == nil {
		f.Add(data)
	}
	for _, c := range errCases {
		f.Add([]byte(c.json))
	}
	f.Add([]byte(denseDoc(17))) // 2^17 table entries: over fuzzLimits
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadWith(bytes.NewReader(data), "fuzz.json", JSON, fuzzLimits)
		if err != nil {
			checkRejected(t, err, "fuzz.json")
			return
		}
		checkAccepted(t, m)
	})
}

// addMsgpackSeeds adds the seed models and the error cases in msgpack.
func addMsgpackSeeds(f *testing.F) {
	for _, m := range seedModels() {
		var b bytes.Buffer
		if err := Write(&b, m, Msgpack); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	for _, c := range errCases {
		if !c.jsonOnly {
			f.Add(toMsgpack(f, c.json))
		}
	}
}

func FuzzReadMsgpack(f *testing.F) {
	addMsgpackSeeds(f)
	f.Add(toMsgpack(f, denseDoc(17))) // 2^17 table entries: over fuzzLimits
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadWith(bytes.NewReader(data), "fuzz.msgpack", Msgpack, fuzzLimits)
		if err != nil {
			checkRejected(t, err, "fuzz.msgpack")
			return
		}
		checkAccepted(t, m)
	})
}
