package engine

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1GiB": 1 << 30, "512M": 512 << 20, "1.5g": 3 << 29, "2 KiB": 2048, "7b": 7, "1TB": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "-1", "1XB", "1e3", "1..2M", "9999999T"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
	for _, v := range []int64{0, 1, 1000, 1 << 30, 3 << 20, 1<<40 + 1} {
		if got, err := ParseSize(FormatSize(v)); err != nil || got != v {
			t.Errorf("FormatSize(%d) = %q reads back as %d, %v", v, FormatSize(v), got, err)
		}
	}
}

// FuzzParseSize: any input is a size >= 0 that formats and reads back to
// itself, or a one-line error naming the input.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "1GiB", "512M", "1.5g", "2 KiB", "x", "1e9", "", "9999999999999T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error has several lines: %v", s, err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("%q: negative size %d", s, v)
		}
		if back, err := ParseSize(FormatSize(v)); err != nil || back != v {
			t.Fatalf("%q: %d formats as %q, reads back as %d, %v", s, v, FormatSize(v), back, err)
		}
	})
}
