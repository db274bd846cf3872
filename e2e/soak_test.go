package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// A soak test, not run in CI: DDRUN_SOAK=5m go test ./e2e -run Soak -v
// -timeout 30m. A Raft group of three coordinators and three workers (two
// parts and a spare) run a long job while a random process is killed with
// SIGKILL every few seconds and started again (same Raft dir, a fresh
// worker name); kills stop after DDRUN_SOAK (or when the job ends first:
// DDRUN_SOAK_SIZE=N makes the N x N grid bigger) and the job must finish
// like an undisturbed run. The summary lists what was killed and what was
// lost (iterations redone).
func TestSoakRandomKills(t *testing.T) {
	d := os.Getenv("DDRUN_SOAK")
	if d == "" {
		t.Skip("set DDRUN_SOAK=DURATION to run the soak test")
	}
	soak, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("DDRUN_SOAK: %v", err)
	}
	coord, worker := binaries(t)
	size := "300"
	if s := os.Getenv("DDRUN_SOAK_SIZE"); s != "" {
		size = s
	}
	model := genModel(t, coord, "potts", "--height", size, "--width", size, "--labels", "4", "--rho", "0.5", ".uai")
	flags := []string{"--json", "--threads", "1", "--tol", "0", "--max-iter", "100000"}
	want := runJSON(t, time.Hour, coord, append(append([]string{"solve", "--algo", "admm", "--quiet"}, flags...), model)...)
	flags = append(flags, "--lost-after", "2s")
	srv := startNATS(t, true)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ports := freePorts(t, 3)
	group := raftGroupAt(t, coord, srv.URL(), model, flags, dirs, ports)
	n := 0
	startWorker := func() *proc {
		n++
		return startWorkerProcs(t, worker, srv.URL(), fmt.Sprintf("soak%d-", n), 1, "--quiet")[0]
	}
	workers := []*proc{startWorker(), startWorker(), startWorker()}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	var killed []string
	end := time.Now().Add(soak)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(3+rng.IntN(5)) * time.Second)
		if finished(group) {
			break
		}
		if k := rng.IntN(6); k < 3 {
			select {
			case <-group[k].done:
				continue // this member already exited: the job is over
			default:
			}
			group[k].kill()
			killed = append(killed, fmt.Sprintf("coordinator c%d", k))
			time.Sleep(500 * time.Millisecond)
			group[k] = raftGroupMember(t, coord, srv.URL(), model, flags, dirs, ports, k)
		} else {
			w := k - 3
			workers[w].kill()
			killed = append(killed, workers[w].name+" "+fmt.Sprint(w))
			workers[w] = startWorker()
		}
	}
	printed := groupResult(t, group, 30*time.Minute)
	got := printed[0]
	t.Logf("soak of %v: %d kills (%s); failovers %v, iterations redone %v of %d",
		soak, len(killed), strings.Join(killed, ", "), deref(intf(got.Failovers)), deref(intf(got.Redone)), got.Iterations)
	closeResult(t, got, want)
}

// finished reports whether every member of the group has exited.
func finished(group []*proc) bool {
	for _, p := range group {
		select {
		case <-p.done:
		default:
			return false
		}
	}
	return true
}
