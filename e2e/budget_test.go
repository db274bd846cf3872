package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run's --max-entries is each process's budget, not the model's: a 30x30
// 4-label grid (3,600 states) runs on 2 workers with a budget of 2,500
// (each part's states fit), and stops, non-zero, with one line naming the
// worker, its part and the budget when a part's states do not (1,000),
// for either algorithm, and given as msgpack (converted on the fly, which
// checks each table and cardinality, not the totals) as well as .ddx;
// gen writes it under that budget (streamed, it holds no model); solve,
// one process holding the model, keeps the total's check.
func TestRunMaxEntriesPerPart(t *testing.T) {
	coord, _ := binaries(t)
	dir := t.TempDir()
	path, mp := filepath.Join(dir, "g.ddx"), filepath.Join(dir, "g.msgpack")
	for _, p := range []string{path, mp} {
		runOK(t, coord, "gen", "potts", "--height", "30", "--width", "30", "--labels", "4", "--seed", "1", "--max-entries", "2500", "--quiet", "-o", p)
	}
	for _, c := range []struct{ algo, in string }{{"trws", path}, {"admm", path}, {"admm", mp}} {
		algo := c.algo
		args := []string{"run", "--local", "--workers", "2", "--algo", algo, "--max-iter", "2", "--quiet"}
		if stderr, err := runStderr(coord, append(args, "--max-entries", "2500", c.in)...); err != nil {
			t.Errorf("%s %s, parts within the budget: %v, stderr %q", algo, c.in, err, stderr)
		}
		stderr, err := runStderr(coord, append(args, "--max-entries", "1000", c.in)...)
		last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
		if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || !strings.HasPrefix(last, "coordinator: ") || !strings.Contains(last, "part") || !strings.Contains(last, "worker") || !strings.Contains(last, "limit of 1000") {
			t.Errorf("%s %s, a part over the budget: %v, stderr %q, want a non-zero exit and one line naming the worker, the part and the limit of 1000", algo, c.in, err, stderr)
		}
	}
	stderr, err := runStderr(coord, "solve", "--quiet", "--max-entries", "2500", path)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr, "over the limit of 2500") {
		t.Errorf("solve over the budget: %v, stderr %q", err, stderr)
	}
}
