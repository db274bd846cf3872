package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddrun/ddrun/service"
)

// peakRSS is a process's peak resident memory in bytes (VmHWM), or a
// skip where /proc does not say.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	v := vmHWM(pid)
	if v == 0 {
		t.Skip("no VmHWM in /proc/PID/status")
	}
	return v
}

// The job service's limits on a real service: a gzip upload that
// decompresses beyond --max-model is refused (413) while it is read, and
// the service's peak memory stays far below what the model would take
// (a 31 KB gzip upload once took 558 MB); threads beyond the machine are
// refused; a client past --max-client-jobs gets 429; distributed jobs
// waiting for workers end when cancelled, and SIGTERM stops the service
// with such jobs queued.
func TestServeLimits(t *testing.T) {
	s := startServe(t, t.TempDir(), "--quiet", "--max-model", "4000000", "--max-client-jobs", "3", "--wait", "10m")
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	fmt.Fprintf(zw, "MARKOV\n2\n4096 4096\n1\n2 0 1\n%d\n", 4096*4096)
	zeros := bytes.Repeat([]byte("0 "), 1<<20)
	for range 16 { // 32 MiB of the table's 16.7 M entries
		zw.Write(zeros)
	}
	zw.Close()
	for range 3 {
		code, b := s.call(t, "POST", s.url+"/v1/jobs", "", bomb.Bytes())
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "decompresses to more than 4000000 bytes") {
			t.Fatalf("a %d-byte gzip of 32 MiB: %d %s, want 413", bomb.Len(), code, b)
		}
	}
	if hwm := peakRSS(t, s.cmd.Process.Pid); hwm > 200<<20 {
		t.Errorf("serve's peak memory after three %d-byte gzip bombs: %d MiB, want < 200", bomb.Len(), hwm>>20)
	} else {
		t.Logf("serve's peak memory after three %d-byte gzip bombs: %d MiB", bomb.Len(), hwm>>20)
	}

	model, err := os.ReadFile("../examples/potts-20x20.uai")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 4 {
		code, b := s.call(t, "POST", s.url+"/v1/jobs?workers=1&max_iter=10", "", model)
		if i < 3 {
			if code != http.StatusCreated {
				t.Fatalf("job %d: %d %s", i, code, b)
			}
			var st service.Status
			decode(t, b, &st)
			ids = append(ids, st.ID)
			continue
		}
		if code != http.StatusTooManyRequests || !strings.Contains(string(b), "3 unfinished jobs") {
			t.Errorf("a 4th unfinished job: %d %s, want 429", code, b)
		}
	}
	t.Logf("cancelling at %v", time.Now())
	for _, id := range ids[1:] {
		if code, b := s.call(t, "DELETE", s.url+"/v1/jobs/"+id, "", nil); code != http.StatusAccepted {
			t.Fatalf("cancel: %d %s", code, b)
		}
		if st := s.wait(t, id, 30*time.Second); st.State != "cancelled" {
			t.Errorf("cancelled job waiting for workers: %+v", st)
		}
	}
	// SIGTERM with a job waiting for workers: the service stops (stop
	// fails the test after 10 s).
	start := time.Now()
	s.stop(t)
	t.Logf("stopped %v after SIGTERM", time.Since(start))
}

// Without --data-dir, serve keeps its jobs and its generated token under
// the user's state directory ($XDG_STATE_HOME/ddrun), says so on stderr,
// and writes nothing into the directory it was started from.
func TestServeDefaultDataDir(t *testing.T) {
	coord, _ := binaries(t)
	state, cwd := t.TempDir(), t.TempDir()
	cmd := exec.Command(coord, "serve", "--listen", "127.0.0.1:0")
	cmd.Dir = cwd
	// The job key (TestMain's) stays: serve refuses to start without one.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "DDRUN_") && !strings.HasPrefix(e, "DDRUN_JOB_KEY=")
	}), "XDG_STATE_HOME="+state)
	p := startCmd(t, "serve", cmd)
	want := filepath.Join(state, "ddrun")
	waitLine(t, p, "data="+want, 30*time.Second)
	waitLine(t, p, "token="+filepath.Join(want, "api-token"), 5*time.Second)
	waitLine(t, p, "http=http://127.0.0.1:", 5*time.Second)
	if fi, err := os.Stat(filepath.Join(want, "api-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(want, "jobs")); err != nil || !fi.IsDir() {
		t.Errorf("jobs directory: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("serve wrote %d entries into its working directory", len(ents))
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 10*time.Second); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, p.stderr())
	}
}
