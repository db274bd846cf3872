package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Workers that share no filesystem with the coordinator: each has a
// --state-dir of its own, and the coordinator's state directory (where it
// converted the msgpack model to .ddx) is moved away once the coordinator
// has hashed the file, before any worker starts, so that no worker can
// read the file at the path its part's spec names. With --parts auto (the
// default) they receive the blocks their parts read over NATS, sealed
// under the job key, and the run, DD-ADMM and distributed TRW-S alike,
// ends as the run whose workers read the file: the same iterations, dual
// and primal. The workers' directories are empty again once the parts are
// loaded.
func TestPartsOverNATS(t *testing.T) {
	coord, worker := binaries(t)
	srv := startNATS(t, false)
	key := keyFile(t)
	model := genModel(t, coord, "potts", "--height", "60", "--width", "50", "--labels", "4", "--rho", "0.5", ".msgpack")
	for i, algo := range []string{"admm", "trws"} {
		t.Run(algo, func(t *testing.T) {
			flags := []string{"--json", "--max-iter", "40", "--tol", "0", "--threads", "1"}
			if algo == "admm" {
				flags = append(flags, "--algo", "admm")
			}
			shared := filepath.Join(t.TempDir(), "state")
			want := runJSON(t, 2*time.Minute, coord, append(append([]string{"run", "--local", "--workers", "2", "--quiet", "--parts", "file", "--state-dir", shared}, flags...), model)...)
			if want.Primal == nil || want.Dual == nil {
				t.Fatalf("the shared-file run: %s after %d, no bound", want.Status, want.Iterations)
			}

			states := filepath.Join(t.TempDir(), "state")
			job := fmt.Sprintf("parts%d", i)
			run := startProc(t, "coordinator", coord, append(append([]string{"run", "--nats", srv.URL(), "--workers", "2", "--job", job,
				"--job-key-file", key, "--state-dir", states}, flags...), model)...)
			waitLine(t, run, "blocks hashed", time.Minute)
			if err := os.Rename(states, states+".gone"); err != nil {
				t.Fatal(err)
			}
			dirs := []string{t.TempDir(), t.TempDir()}
			var ws []*proc
			for k, d := range dirs {
				ws = append(ws, startWorkerProcs(t, worker, srv.URL(), fmt.Sprintf("%s-own%d-", job, k), 1, "--state-dir", d, "--job-key-file", key)...)
			}
			if err := run.wait(t, 2*time.Minute); err != nil {
				t.Fatalf("run: %v\n%s", err, run.stderr())
			}
			got := run.result(t)
			sameResult(t, got, want)
			for k, w := range ws {
				if !strings.Contains(w.stderr(), "part received from the coordinator") {
					t.Errorf("worker %d received no part:\n%s", k, w.stderr())
				}
				if es, err := os.ReadDir(dirs[k]); err != nil || len(es) != 0 {
					t.Errorf("worker %d's --state-dir holds %d entries (%v) once its part is loaded", k, len(es), err)
				}
			}
		})
	}
}
