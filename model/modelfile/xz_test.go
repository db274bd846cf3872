package modelfile

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// writeXZ writes data xz-compressed to dir/name.
func writeXZ(t *testing.T, dir, name, data string) string {
	t.Helper()
	return writeCompressed(t, dir, name, data, func(w io.Writer) (io.WriteCloser, error) { return xz.NewWriter(w) })
}

// writeGzip writes data gzip-compressed to dir/name.
func writeGzip(t *testing.T, dir, name, data string) string {
	t.Helper()
	return writeCompressed(t, dir, name, data, func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil })
}

// writeEncodings writes data to dir/name plain, and gzip- and
// xz-compressed beside it (name.gz, name.xz), and returns the three paths.
func writeEncodings(t *testing.T, dir, name, data string) []string {
	t.Helper()
	plain := filepath.Join(dir, name)
	if err := os.WriteFile(plain, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{plain, writeGzip(t, dir, name+".gz", data), writeXZ(t, dir, name+".xz", data)}
}

// writeCompressed writes data to dir/name through the compressor that
// compress makes.
func writeCompressed(t *testing.T, dir, name, data string, compress func(io.Writer) (io.WriteCloser, error)) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw, err := compress(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadXZ(t *testing.T) {
	dir := t.TempDir()
	const uaiText = "MARKOV 2 2 2 1 2 0 1 4 1 2 3 4"
	m, err := Load(writeXZ(t, dir, "a.uai.xz", uaiText))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Score([]int{1, 1}); got < 1.386 || got > 1.387 { // ln 4
		t.Fatalf("score %v, want ln 4", got)
	}
	// .LG.xz reads natural logarithms, as .LG does.
	lg, err := LoadWith(context.Background(), writeXZ(t, dir, "a.LG.xz", uaiText), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lg.Score([]int{1, 1}); got != 4 {
		t.Fatalf("LG score %v, want 4", got)
	}
	// A bomb beyond the entry limit's bytes stops with a one-line error.
	big := uaiText + strings.Repeat(" ", 2<<20)
	_, err = LoadWith(context.Background(), writeXZ(t, dir, "b.uai.xz", big), Options{MaxEntries: 4})
	if err == nil || !strings.Contains(err.Error(), "entry limit") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bomb: %v", err)
	}
	// Not xz at all.
	bad := filepath.Join(dir, "c.uai.xz")
	os.WriteFile(bad, []byte(uaiText), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":1:") {
		t.Fatalf("not xz: %v", err)
	}
}

func TestSaveXZRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.uai.xz")
	err := Convert(context.Background(), "x.uai", out, ConvertOptions{})
	if err == nil || !strings.Contains(err.Error(), "xz is not supported") {
		t.Fatalf("convert to .xz: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("an .xz output was written")
	}
}
