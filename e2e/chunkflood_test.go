package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ddrun/ddrun/transport"
)

// floodFrame is chunk frame index of a message that claims size bytes in
// chunks of payload bytes (transport.ChunkHeaderLen's layout), number n of
// sender s.
func floodFrame(s byte, n uint64, index uint32, payload int, size uint64) []byte {
	b := make([]byte, transport.ChunkHeaderLen+payload)
	copy(b, "DDC")
	b[3] = transport.Version
	b[8] = s
	binary.BigEndian.PutUint64(b[16:], n)
	binary.BigEndian.PutUint32(b[24:], index)
	binary.BigEndian.PutUint32(b[28:], uint32((size+uint64(payload)-1)/uint64(payload)))
	binary.BigEndian.PutUint32(b[32:], uint32(payload))
	binary.BigEndian.PutUint64(b[36:], size)
	return b
}

// The chunk flood against a default `run --local` job (sealed
// with a job key): a client of the job's NATS server sends 256 MiB of
// chunk frames, messages of 32 MiB each but for their last chunk, on the
// coordinator's report, heartbeat and control subjects while the job runs
// (before every frame was sealed, the coordinator buffered such messages
// until they timed out: 1 GiB of them took it to 3.7 GB). The
// job ends with the undisturbed result (the same status, iterations, dual
// and primal as the same run without the flood), and the coordinator's
// peak memory stays within 96 MiB of the undisturbed run's: the forged
// frames are dropped as not authentic before anything is buffered. At
// least half the frames must have been sent before the job ended.
func TestChunkFloodLocalRun(t *testing.T) {
	coord, _ := binaries(t)
	model, flags := faultFile(t, coord, faultRounds)
	const (
		payload = 64 << 10
		claim   = 32 << 20
		frames  = 4096 // 256 MiB
		margin  = 96 << 20
	)
	run := func(name string, flood bool) (result, int64, int64) {
		srv := startNATS(t, false)
		sent, flooded := func() int64 { return 0 }, func() {}
		if flood {
			sent, flooded = floodChunks(t, srv.URL(), frames, payload, claim, nil)
		}
		args := append(append([]string{"run", "--local", "--nats", srv.URL(), "--workers", "2", "--job", "flood-" + name, "--quiet"}, flags...), model)
		p := startProc(t, "coordinator-"+name, coord, args...)
		var peak atomic.Int64
		stop := make(chan struct{})
		var watch sync.WaitGroup
		watch.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-p.done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if v := vmHWM(p.cmd.Process.Pid); v > peak.Load() {
					peak.Store(v)
				}
			}
		})
		err := p.wait(t, 3*time.Minute)
		during := sent() // frames sent while the job ran
		close(stop)
		watch.Wait()
		flooded()
		if err != nil {
			t.Fatalf("%s run: %v\n%s", name, err, p.stderr())
		}
		if flood && !strings.Contains(p.stderr(), "not authentic") {
			t.Errorf("the coordinator did not warn about the forged frames:\n%s", p.stderr())
		}
		return p.result(t), peak.Load(), during
	}
	want, basePeak, _ := run("undisturbed", false)
	got, peak, sent := run("flooded", true)
	t.Logf("undisturbed: peak %d MiB; flooded with %d frames (%d MiB): peak %d MiB", basePeak>>20, sent, sent*payload>>20, peak>>20)
	if sent < frames/2 {
		t.Errorf("only %d forged frames sent during the run: the test did not test", sent)
	}
	sameResult(t, got, want)
	if basePeak > 0 && peak > basePeak+margin {
		t.Errorf("the flooded coordinator peaked at %d MiB, the undisturbed one at %d MiB: more than %d MiB apart", peak>>20, basePeak>>20, margin>>20)
	}
}

// floodChunks connects to the NATS server at url and, once it has seen a
// job's report or heartbeat subjects, sends frames chunk frames of
// payload bytes there and on ddrun.control: messages that claim size
// bytes each, every frame but the last of each (for at most 2 minutes).
// It stops early when stop is closed (never when nil). sent says how many
// it has sent; wait waits until it has sent them all (or its 2 minutes are
// over, or stop closed) and disconnects.
func floodChunks(t *testing.T, url string, frames, payload, size int, stop <-chan struct{}) (sent func() int64, wait func()) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	perMsg := uint64((size + payload - 1) / payload) // frames of a message; the last is never sent
	var n atomic.Int64
	var wg sync.WaitGroup
	targets := make(chan string, 64)
	seen := map[string]bool{}
	var mu sync.Mutex
	sub, err := nc.Subscribe("ddrun.>", func(m *nats.Msg) {
		if !strings.Contains(m.Subject, ".report.") && !strings.Contains(m.Subject, ".heartbeat.") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[m.Subject] {
			seen[m.Subject] = true
			select {
			case targets <- m.Subject:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		subjects := []string{"ddrun.control"}
		deadline := time.After(2 * time.Minute)
		for i := uint64(0); n.Load() < int64(frames); i++ {
			select {
			case s := <-targets:
				subjects = append(subjects, s)
			case <-deadline:
				return
			case <-stop:
				return
			default:
			}
			if len(subjects) == 1 { // not yet seen the job's subjects
				time.Sleep(10 * time.Millisecond)
				continue
			}
			msg := i / (perMsg - 1)
			fr := floodFrame(byte(msg), msg, uint32(i%(perMsg-1)), payload, uint64(size))
			if err := nc.Publish(subjects[msg%uint64(len(subjects))], fr); err != nil {
				return
			}
			if n.Add(1)%16 == 0 {
				_ = nc.Flush() // at the pace the server takes them
			}
		}
	})
	return n.Load, func() {
		wg.Wait()
		_ = sub.Unsubscribe()
		nc.Close()
	}
}

// vmHWM is a process's peak resident memory in bytes (VmHWM), 0 when
// /proc does not say (the process ended, or no /proc).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
