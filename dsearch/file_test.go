package dsearch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/oracle"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// ddxFile writes m to an indexed file in a temporary directory.
func ddxFile(t *testing.T, m *model.Model) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m"+indexed.Ext)
	if err := indexed.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// RunFile, the workers reading the model from its indexed file, certifies
// the brute-force MAP of frustrated grids and random tiny models (hard
// constraints included), under evidence too, with no answer rejected: the
// coordinator's re-scoring from the file agrees with the workers'.
func TestRunFileMatchesBruteForce(t *testing.T) {
	tr := inProc(t)
	newPool(t, tr, "w1", "w2", "w3")
	ms := hardAndTinyModels(8, 7)
	for i, m := range ms {
		res, st, err := RunFile(context.Background(), tr, ddxFile(t, m), nil, testOptions(3, admmSettings(20)), nil)
		if err != nil {
			t.Fatalf("model %d: %v", i, err)
		}
		checkCertified(t, fmt.Sprintf("model %d", i), m, res)
		if st.Rejected != 0 {
			t.Fatalf("model %d: %d answers rejected", i, st.Rejected)
		}
	}
	// Under evidence: the optimum of the model with the observed
	// variables' unaries forbidding every other state.
	grid := generate.GridOptions{Height: 4, Width: 4, Rho: 3, Seed: 5}
	m := generate.Ising(grid)
	ev := model.Evidence{0: 1, 9: 0}
	res, _, err := RunFile(context.Background(), tr, ddxFile(t, m), ev, testOptions(2, admmSettings(20)), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCertified(t, "evidence", oracle.Clamped(m, ev), res)
}

// RunFile takes absolute .ddx paths only, and a worker reads the file an
// open message names only when it is the one the coordinator checked:
// another file at the path (a size or structure checksum that differs) is
// refused with a one-line reason.
func TestRunFileChecksTheFile(t *testing.T) {
	tr := inProc(t)
	m := generate.Ising(generate.GridOptions{Height: 3, Width: 3, Rho: 1, Seed: 1})
	path := ddxFile(t, m)
	for _, bad := range []string{"m.ddx", strings.TrimSuffix(path, indexed.Ext) + ".uai"} {
		if _, _, err := RunFile(context.Background(), tr, bad, nil, testOptions(1, admmSettings(5)), nil); err == nil {
			t.Errorf("RunFile(%q): no error", bad)
		}
	}
	g, err := openFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	w := &wserver{opts: WorkerOptions{ModelPath: func(p string) (string, error) { return p, nil }}}
	o := &openBody{File: path, Size: g.s.Size(), CRC: g.s.StructureCRC()}
	got, err := w.model("j", o)
	if err != nil || got.NumVars() != m.NumVars() {
		t.Fatalf("the checked file: %v", err)
	}
	other := generate.Ising(generate.GridOptions{Height: 3, Width: 3, Rho: 1, Seed: 2})
	if err := indexed.WriteFile(path, other); err != nil {
		t.Fatal(err)
	}
	if _, err := w.model("j", o); err == nil || !strings.Contains(err.Error(), "another file") {
		t.Errorf("another file at the path: %v", err)
	}
	for _, f := range []string{"rel.ddx", path + ".json", filepath.Join(t.TempDir(), "none.ddx")} {
		if _, err := w.model("j", &openBody{File: f}); err == nil {
			t.Errorf("open of %q: no error", f)
		} else if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), f) {
			t.Errorf("open of %q: a multi-line error or one naming the path: %q", f, err)
		}
	}
	// Without directories (ModelPath nil), a worker reads no file.
	if _, err := (&wserver{}).model("j", &openBody{File: path, Size: o.Size, CRC: o.CRC}); err == nil || strings.Contains(err.Error(), path) {
		t.Errorf("a worker without directories: %v, want a refusal naming no path", err)
	}
	_ = os.Remove(path)
}

// Workers that may not read the file refuse the job, and the search ends
// after its wait with the refusal's reason, not waiting for ever.
func TestRunFileRefusedByEveryWorker(t *testing.T) {
	tr := inProc(t)
	p := &pool{t: t, tr: tr, cancels: map[string]context.CancelFunc{}, noFiles: true}
	p.start("w1", nil)
	t.Cleanup(p.stop)
	o := testOptions(1, admmSettings(5))
	o.Wait = 2 * time.Second
	m := generate.Ising(generate.GridOptions{Height: 3, Width: 3, Rho: 1, Seed: 1})
	_, _, err := RunFile(context.Background(), tr, ddxFile(t, m), nil, o, nil)
	if err == nil || !strings.Contains(err.Error(), "no worker for 2s") || !strings.Contains(err.Error(), "reads no model file") {
		t.Fatalf("every worker refusing: %v", err)
	}
}
