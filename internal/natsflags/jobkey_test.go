package natsflags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/transport"
)

const (
	keyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	keyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// The file wins over the environment; without either the transport is
// not wrapped; Env hands the loaded keys on in one line.
func TestJobKeyWrap(t *testing.T) {
	inner := transport.NewInProc()
	defer inner.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte(keyA+"\n"+keyB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Setenv(JobKeyEnv, "")
	var none JobKey
	tr, closeTr, err := none.Wrap(inner, nil)
	if err != nil || tr != transport.Transport(inner) || none.Env() != nil {
		t.Fatalf("no key: %v %T %v", err, tr, none.Env())
	}
	closeTr()

	t.Setenv(JobKeyEnv, "not a key")
	k := JobKey{File: file}
	tr, closeTr, err = k.Wrap(inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTr()
	if _, ok := tr.(*transport.Sealed); !ok {
		t.Fatalf("with a key file: %T", tr)
	}
	if env := k.Env(); len(env) != 1 || env[0] != JobKeyEnv+"="+keyA+","+keyB {
		t.Fatalf("Env() = %q", env)
	}

	var fromEnv JobKey
	if _, _, err := fromEnv.Wrap(inner, nil); err == nil || !strings.Contains(err.Error(), "$"+JobKeyEnv) {
		t.Fatalf("bad $%s: %v", JobKeyEnv, err)
	}
	for _, bad := range []JobKey{{File: filepath.Join(dir, "missing")}, {File: filepath.Join(dir, "empty")}} {
		_ = os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600)
		if _, _, err := bad.Wrap(inner, nil); err == nil || !strings.Contains(err.Error(), "--job-key-file") {
			t.Errorf("%s: %v", bad.File, err)
		}
	}
}
