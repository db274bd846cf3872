package indexed

import (
	"bytes"
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
