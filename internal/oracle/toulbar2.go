package oracle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/uai"
)

// ErrNoToulbar2 is returned when toulbar2 is not installed
// (apt-get install toulbar2); tests skip on it.
var ErrNoToulbar2 = errors.New("toulbar2 is not installed")

// Toulbar2Optimum solves m exactly with toulbar2, an independent branch and
// bound solver, and returns the score of its optimal assignment (scored by
// m itself; toulbar2 rounds costs to 7 decimals while searching). It fails
// when toulbar2 does not prove optimality within timeout.
func Toulbar2Optimum(m *model.Model, timeout time.Duration) (float64, error) {
	if _, err := exec.LookPath("toulbar2"); err != nil {
		return 0, ErrNoToulbar2
	}
	dir, err := os.MkdirTemp("", "ddrun-toulbar2-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	file, sol := filepath.Join(dir, "m.uai"), filepath.Join(dir, "sol.txt")
	if err := uai.WriteFile(file, m); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "toulbar2", file, "-w="+sol).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Optimum:") {
		return 0, fmt.Errorf("toulbar2 proved no optimum: %v\n%s", err, out)
	}
	data, err := os.ReadFile(sol)
	if err != nil {
		return 0, err
	}
	// Only the first line of the -w file is valid in toulbar2 1.1.1.
	fields := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	if len(fields) != m.NumVars() {
		return 0, fmt.Errorf("toulbar2 solution has %d values for %d variables", len(fields), m.NumVars())
	}
	x := make([]int, len(fields))
	for i, f := range fields {
		if x[i], err = strconv.Atoi(f); err != nil {
			return 0, fmt.Errorf("toulbar2 solution: %w", err)
		}
	}
	return m.Score(x), nil
}
