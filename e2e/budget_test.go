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
// for either algorithm; solve, one process holding the model, keeps the
// total's check.
func TestRunMaxEntriesPerPart(t *testing.T) {
	coord, _ := binaries(t)
	path := filepath.Join(t.TempDir(), "g.ddx")
	runOK(t, coord, "gen", "potts", "--height", "30", "--width", "30", "--labels", "4", "--seed", "1", "-o", path)
	for _, algo := range []string{"trws", "admm"} {
		args := []string{"run", "--local", "--workers", "2", "--algo", algo, "--max-iter", "2", "--quiet"}
		if stderr, err := runStderr(coord, append(args, "--max-entries", "2500", path)...); err != nil {
			t.Errorf("%s, parts within the budget: %v, stderr %q", algo, err, stderr)
		}
		stderr, err := runStderr(coord, append(args, "--max-entries", "1000", path)...)
		last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
		if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || !strings.HasPrefix(last, "coordinator: ") || !strings.Contains(last, "part") || !strings.Contains(last, "worker") || !strings.Contains(last, "limit of 1000") {
			t.Errorf("%s, a part over the budget: %v, stderr %q, want a non-zero exit and one line naming the worker, the part and the limit of 1000", algo, err, stderr)
		}
	}
	stderr, err := runStderr(coord, "solve", "--quiet", "--max-entries", "2500", path)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr, "over the limit of 2500") {
		t.Errorf("solve over the budget: %v, stderr %q", err, stderr)
	}
}
