package modelfile

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/model/uai"
)

// LoadTee and LoadEvidenceTee read what Load and uai.ReadEvidenceFile read
// and hash exactly the file's bytes, in every format, compressed or not.
func TestLoadTeeHashesTheFile(t *testing.T) {
	src, err := Load(filepath.Join("..", "..", "examples", "potts-20x20.uai"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"m.uai", "m.uai.gz", "m.json", "m.msgpack.gz"} {
		path := filepath.Join(dir, name)
		if err := Save(path, src); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		m, err := LoadTee(path, h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := Load(path)
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("%s: LoadTee's model differs from Load's", name)
		}
		if sum := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), sum[:]) {
			t.Fatalf("%s: hash of what was read is not the file's sha256", name)
		}
	}

	evPath := filepath.Join(dir, "m.evid")
	evData := []byte("2 0 1 3 0\n")
	if err := os.WriteFile(evPath, evData, 0o644); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	ev, err := LoadEvidenceTee(evPath, src, &got)
	if err != nil {
		t.Fatal(err)
	}
	want, err := uai.ReadEvidenceFile(evPath, src)
	if err != nil || !reflect.DeepEqual(ev, want) {
		t.Fatalf("evidence %v, want %v (%v)", ev, want, err)
	}
	if !bytes.Equal(got.Bytes(), evData) {
		t.Fatalf("evidence bytes written %q, want %q", got.Bytes(), evData)
	}

	if _, err := LoadTee(filepath.Join(dir, "missing.uai"), &got); err == nil || !strings.HasPrefix(err.Error(), "uai: ") {
		t.Fatalf("missing file: %v, want Load's error", err)
	}
	if _, err := LoadTee(filepath.Join(dir, "m.txt"), &got); err == nil || !strings.Contains(err.Error(), "unknown model format") {
		t.Fatalf("unknown format: %v", err)
	}
}
