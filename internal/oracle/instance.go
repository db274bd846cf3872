package oracle

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// Instance reads the real instance at rel (a UAI file, see
// instances.Path) and its evidence,
// when a .evid file lies beside it; it fails the test on a read error and
// skips it when the instance is absent.
func Instance(t testing.TB, rel string) (*model.Model, model.Evidence) {
	t.Helper()
	path := instances.Path(t, rel)
	m, err := uai.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev model.Evidence
	if _, err := os.Stat(path + ".evid"); err == nil {
		if ev, err = uai.ReadEvidenceFile(path+".evid", m); err != nil {
			t.Fatal(err)
		}
	}
	return m, ev
}

// BruteMAP is BruteForceMAP for a test: it fails the test on an error.
func BruteMAP(t testing.TB, m *model.Model) (best float64, x []int) {
	t.Helper()
	best, x, err := BruteForceMAP(m)
	if err != nil {
		t.Fatal(err)
	}
	return best, x
}

// Toulbar2 is Toulbar2Optimum for a test: it skips the test when toulbar2
// is not installed and fails it on any other error.
func Toulbar2(t testing.TB, m *model.Model, timeout time.Duration) float64 {
	t.Helper()
	opt, err := Toulbar2Optimum(m, timeout)
	if errors.Is(err, ErrNoToulbar2) {
		t.Skip("toulbar2 not installed (apt-get install toulbar2)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// LP is LocalPolytopeLP for a test: it fails the test on an error.
func LP(t testing.TB, m *model.Model) float64 {
	t.Helper()
	v, err := LocalPolytopeLP(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
