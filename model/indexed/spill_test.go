package indexed

import (
	"bytes"
	"math/rand"
	"os"
	"testing"
)

// TestSpill runs the same random appends (small ones and ones larger than
// the buffer) and in-place updates (near and far, crossing the window) on
// a spill in memory and one on file, and checks that both hold the bytes
// of a plain slice, and that the file is gone once released.
func TestSpill(t *testing.T) {
	dir := t.TempDir()
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		mem, _ := newSpill("", "test")
		file, err := newSpill(dir, "test")
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for op := 0; op < 400; op++ {
			switch {
			case r.Intn(3) > 0 || len(want) == 0:
				n := r.Intn(3000)
				if r.Intn(40) == 0 {
					n = spillBuf + r.Intn(spillBuf)
				}
				p := make([]byte, n)
				r.Read(p)
				want = append(want, p...)
				for _, s := range []*spill{mem, file} {
					if err := s.write(p); err != nil {
						t.Fatal(err)
					}
				}
			default:
				off := r.Int63n(int64(len(want)))
				n := r.Int63n(min(int64(len(want))-off, 2*spillBuf) + 1)
				v := byte(r.Intn(256))
				for i := range want[off : off+n] {
					want[off+int64(i)] += v
				}
				for _, s := range []*spill{mem, file} {
					b, err := s.span(off, n)
					if err != nil {
						t.Fatal(err)
					}
					for i := range b {
						b[i] += v
					}
				}
			}
		}
		for name, s := range map[string]*spill{"memory": mem, "file": file} {
			if s.size != int64(len(want)) {
				t.Fatalf("seed %d, %s: size %d, want %d", seed, name, s.size, len(want))
			}
			var got []byte
			if err := s.copyTo(func(p []byte) { got = append(got, p...) }); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d, %s: %d bytes differ from the %d written", seed, name, len(got), len(want))
			}
			if _, err := s.span(s.size-1, 2); err == nil {
				t.Fatalf("%s: a span past the end: no error", name)
			}
			s.release()
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("seed %d: %d temporary files left", seed, len(left))
		}
	}
}
