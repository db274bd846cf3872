package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model/wcsp"
)

// toulbar2Files are table-only .wcsp files of toulbar2's validation/default
// (no global cost function, no interval variable) that solve certifies
// within 10 s; the files themselves are never part of this repository.
var toulbar2Files = []string{"4queens-bis.wcsp", "4queens.wcsp", "cap131.wcsp", "example.wcsp",
	"oconnell.wcsp", "oconnell_bayesnet.wcsp", "warehouse.wcsp", "zebra.wcsp"}

var optimumLine = regexp.MustCompile(`(?m)^Optimum: (-?[0-9]+)`)

// coordinator solve ends optimal on toulbar2's own WCSP files with the
// cost toulbar2 prints as its optimum. It needs toulbar2 on PATH and the
// files (git show HEAD:validation/default/FILE from toulbar2's repository)
// in the folder DDRUN_TOULBAR2_FILES; it skips otherwise.
func TestToulbar2WCSPOptima(t *testing.T) {
	tb2, err := exec.LookPath("toulbar2")
	if err != nil {
		t.Skip("toulbar2 is not on PATH")
	}
	dir := os.Getenv("DDRUN_TOULBAR2_FILES")
	if dir == "" {
		t.Skip("DDRUN_TOULBAR2_FILES is not set")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("DDRUN_TOULBAR2_FILES: %v", err)
	}
	coord, _ := binaries(t)
	for _, name := range toulbar2Files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, tb2, path).CombinedOutput()
			if err != nil {
				t.Fatalf("toulbar2 %s: %v\n%s", name, err, out)
			}
			m := optimumLine.FindSubmatch(out)
			if m == nil {
				t.Fatalf("toulbar2 %s printed no optimum:\n%s", name, out)
			}
			want, _ := strconv.ParseFloat(string(m[1]), 64)
			r := runJSON(t, time.Minute, coord, "solve", "--time-limit", "10", "--json", "--quiet", path)
			if r.Status != "optimal" || r.Primal == nil || wcsp.Cost(*r.Primal) != want || r.Cost == nil || *r.Cost != want {
				t.Fatalf("solve %s: %s, primal %v, cost %v; toulbar2's optimum %v", name, r.Status, deref(r.Primal), deref(r.Cost), want)
			}
			t.Logf("%s: optimal, cost %v = toulbar2's optimum", name, wcsp.Cost(*r.Primal))
		})
	}
}
