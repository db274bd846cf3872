package natsflags

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/transport"
)

const (
	keyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	keyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// The file wins over the environment; without either Wrap refuses (with
// how to get a key), generates one for the workers it starts, or, with
// --insecure, leaves the transport unsealed (ignoring the environment);
// Env hands the loaded keys on in one line.
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
	if _, _, err := none.Wrap(inner, nil); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "openssl rand -hex 32") ||
		!strings.Contains(err.Error(), "--insecure") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("no key: %v", err)
	}
	gen := JobKey{Generate: true}
	tr, closeTr, err := gen.Wrap(inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.(*transport.Sealed); !ok || len(gen.Env()) != 1 || len(gen.Env()[0]) != len(JobKeyEnv)+1+64 {
		t.Fatalf("generated: %T %q", tr, gen.Env())
	}
	closeTr()
	if again := (JobKey{Generate: true}); true {
		_, closeAgain, err := again.Wrap(inner, nil)
		if err != nil || again.Env()[0] == gen.Env()[0] {
			t.Fatalf("two generated keys: %v %q %q", err, again.Env(), gen.Env())
		}
		closeAgain()
	}
	t.Setenv(JobKeyEnv, keyA)
	insecure := JobKey{Insecure: true}
	tr, closeTr, err = insecure.Wrap(inner, nil)
	if err != nil || tr != transport.Transport(inner) || insecure.Env() != nil {
		t.Fatalf("--insecure: %v %T %v", err, tr, insecure.Env())
	}
	closeTr()
	if _, _, err := (&JobKey{Insecure: true, File: file}).Wrap(inner, nil); err == nil {
		t.Fatal("--insecure with --job-key-file taken")
	}

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

// Checkpoints are sealed with a key that was given (the file, else the
// environment), so that a later run with the same key resumes them; not
// with a generated one, nor under --insecure; a bad key is an error.
func TestCheckpointSealer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte(keyB+","+keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(JobKeyEnv, keyA)
	env, err := (&JobKey{}).CheckpointSealer()
	if err != nil || env == nil {
		t.Fatalf("from the environment: %v, %v", env, err)
	}
	rotated, err := (&JobKey{File: file}).CheckpointSealer()
	if err != nil || rotated == nil {
		t.Fatalf("from the file: %v, %v", rotated, err)
	}
	// What the environment's key sealed opens with the file's rotated keys.
	raw := checkpoint.NewMem()
	m, err := checkpoint.Write(ctx, checkpoint.Seal(raw, env), checkpoint.Manifest{Job: "j", Epoch: 1, Iteration: 1}, []checkpoint.Part{{Role: "master", Data: []byte("state")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Read(ctx, checkpoint.Seal(raw, rotated), &m); err != nil {
		t.Errorf("resume with the rotated keys: %v", err)
	}
	if s, err := (&JobKey{Insecure: true}).CheckpointSealer(); s != nil || err != nil {
		t.Errorf("--insecure: %v, %v", s, err)
	}
	t.Setenv(JobKeyEnv, "")
	if s, err := (&JobKey{Generate: true}).CheckpointSealer(); s != nil || err != nil {
		t.Errorf("no key given: %v, %v", s, err)
	}
	t.Setenv(JobKeyEnv, "not-a-key")
	if _, err := (&JobKey{}).CheckpointSealer(); err == nil {
		t.Error("a bad key accepted")
	}
}
