package indexed

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model"
)

// seeds are the fuzzers' corpus, run as plain tests by go test: valid
// files with every kind and block size, and a few broken ones.
func seeds(t testing.TB) [][]byte {
	empty := encode(t, model.New(nil), 0)
	full := encode(t, sample(), MinBlockSize)
	return [][]byte{empty, full, encode(t, sample(), DefaultBlockSize), encode(t, model.New([]int{3, 1, 2}), 0),
		full[:len(full)-1], append(append([]byte(nil), full[:20]...), full[len(full)-trailerSize:]...), []byte("DDRUNIDX"), nil}
}

// checkErr fails on an error that is not one line naming the file.
func checkErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "indexed: f.ddx: ") {
		t.Fatalf("error %q", msg)
	}
}

// FuzzReadStructure reads the structure of any bytes, resealed (checksums
// recomputed) so that the mutations reach the decoder, then all payloads:
// no panic, one-line errors, and a model that is read is valid.
func FuzzReadStructure(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = reseal(data)
		m, err := ReadModel(bytes.NewReader(data), int64(len(data)), "f.ddx", ReadOptions{MaxEntries: 1 << 16})
		checkErr(t, err)
		if err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("read an invalid model: %v", err)
			}
		}
	})
}

// FuzzReadFactors reads the factors named by the bytes of ids from a
// resealed file.
func FuzzReadFactors(f *testing.F) {
	for i, s := range seeds(f) {
		f.Add(s, []byte{byte(i), 0, 3, 200, 3})
	}
	f.Fuzz(func(t *testing.T, data, ids []byte) {
		data = reseal(data)
		s, err := ReadStructure(bytes.NewReader(data), int64(len(data)), "f.ddx", ReadOptions{MaxEntries: 1 << 16})
		checkErr(t, err)
		if err != nil {
			return
		}
		list := make([]int, len(ids))
		for i, b := range ids {
			list[i] = int(b) - 2 // some out of range
		}
		fs, err := ReadFactors(bytes.NewReader(data), s, list)
		checkErr(t, err)
		if err == nil && len(fs) != len(list) {
			t.Fatalf("%d factors for %d ids", len(fs), len(list))
		}
	})
}

// FuzzWalk walks any bytes, resealed: no panic, one-line errors, and Walk
// succeeds when ReadStructure does, reporting what it reads; then the
// factors read by ReadRecords are ReadModel's (or both fail on a payload
// value), as are the variables ReadVars reads. A range read from an
// arbitrary position (at) must not panic.
func FuzzWalk(f *testing.F) {
	for i, s := range seeds(f) {
		f.Add(s, uint32(i*4099))
	}
	f.Fuzz(func(t *testing.T, data []byte, at uint32) {
		data = reseal(data)
		opts := ReadOptions{MaxEntries: 1 << 16}
		r := bytes.NewReader(data)
		st, serr := ReadStructure(r, int64(len(data)), "f.ddx", opts)
		s, err := OpenScan(r, int64(len(data)), "f.ddx", opts)
		checkErr(t, err)
		if err != nil {
			if serr == nil {
				t.Fatalf("OpenScan: %v, ReadStructure reads", err)
			}
			return
		}
		if nf := s.NumFactors(); nf > 0 {
			span := max(1, s.structEnd()-s.recordsFrom())
			pos := s.recordsFrom() + int64(at>>8)%span
			checkErr(t, s.ReadRecords(pos, int(at)%nf, nf, nil, func(int, *model.Factor) error { return nil }))
		}
		w, err := walk(s)
		checkErr(t, err)
		if (err == nil) != (serr == nil) {
			t.Fatalf("Walk: %v, ReadStructure: %v", err, serr)
		}
		if err != nil {
			return
		}
		if msg := w.differs(st); msg != "" {
			t.Fatal(msg)
		}
		full, merr := ReadModel(r, int64(len(data)), "f.ddx", opts)
		nf := s.NumFactors()
		for _, from := range []int{0, nf / 2} {
			got, err := readRange(s, w.recs, from, nf, nil)
			checkErr(t, err)
			if (err == nil) != (merr == nil) {
				t.Fatalf("ReadRecords from %d: %v, ReadModel: %v", from, err, merr)
			}
			if err == nil && len(got)+len(full.Factors[from:]) > 0 && !reflect.DeepEqual(got, full.Factors[from:]) {
				t.Fatalf("ReadRecords from %d: factors differ", from)
			}
		}
		vars := make([]int, 0, s.NumVars())
		for v := range s.NumVars() {
			if (v+int(at))%3 != 0 {
				vars = append(vars, v)
			}
		}
		cards, unary, err := s.ReadVars(vars)
		if err != nil {
			t.Fatalf("ReadVars: %v", err)
		}
		k := 0
		for j, v := range vars {
			u := st.Model.Unaries(v)
			if cards[j] != st.Model.Cards[v] || !slices.Equal(unary[k:k+len(u)], u) {
				t.Fatalf("ReadVars: variable %d differs", v)
			}
			k += len(u)
		}
	})
}
