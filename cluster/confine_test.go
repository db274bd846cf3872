package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// A forged sharded part sent to an idle worker (a claim, then an
// assignment whose spec names a model outside the worker's directories:
// an absolute path, one through "..", a relative one, a link inside a
// model root that leads out of it; and whose state directory and state
// reference point elsewhere) is refused: the worker creates nothing
// outside its state directory, and its refusal names no path and no
// size of the file it was pointed at.
func TestForgedShardPathsConfined(t *testing.T) {
	c := shard.NewConfinement(t)
	root, states, models, outside, secret, dirs := c.Root, c.States, c.Models, c.Outside, c.Secret, c.Dirs
	tr := transport.NewInProc()
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, tr, WorkerOptions{Name: "w0", Threads: 1, LoadShard: dirs.LoadSpec, ShardStates: shard.StateFiles{Dir: dirs.State}})
	}()
	defer func() { cancel(); <-done }()

	paths := map[string]string{
		"absolute":      secret,
		"dot-dot":       models + "/../outside/secret.ddx",
		"relative":      "outside/secret.ddx",
		"link out":      filepath.Join(models, "link.ddx"),
		"missing":       filepath.Join(outside, "none.ddx"),
		"state dir too": filepath.Join(states, "..", "outside", "secret.ddx"),
	}
	n := 0
	for name, path := range paths {
		n++
		job := fmt.Sprintf("forged%d", n)
		spec, err := (&shard.Spec{Path: path, Size: 12345, NumVars: 4, From: 0, To: 1}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		ref := shard.StateRef{Name: "x.ddstate", Size: 1, Iter: 4}
		body := assignBody{Base: job, Epoch: 1, Coord: 7, Next: 5, Shard: spec,
			StateDir: filepath.Join(outside, "made", job), StateRef: ref.Encode()}
		got := forgePart(t, tr, job, body)
		switch {
		case got == "":
			t.Errorf("%s: the worker took a part whose model is %s", name, path)
		case strings.ContainsRune(got, '/') || strings.Contains(got, root) || strings.Contains(got, "12345"):
			t.Errorf("%s: the refusal %q names a path or a size", name, got)
		case strings.Contains(got, "no such file"):
			t.Errorf("%s: the refusal %q tells whether a file outside the worker's directories exists", name, got)
		default:
			t.Logf("%s: %s", name, got)
		}
	}
	var made []string
	_ = filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != root {
			made = append(made, strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	slices.Sort(made)
	want := []string{"models", "models/link.ddx", "outside", "outside/secret.ddx", "states"}
	if !slices.Equal(made, want) {
		t.Errorf("files after the forged parts: %v, want %v", made, want)
	}
}

// forgePart claims the worker w0 for job, sends it the assignment body and
// returns the error of its ready ("" when it took the part).
func forgePart(t *testing.T, tr transport.Transport, job string, body assignBody) string {
	t.Helper()
	got := make(chan []byte, 16)
	sub, err := tr.Subscribe(reportSubject(job, "w0"), func(_ string, data []byte) { got <- data })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	send := func(seq uint64, kind transport.Kind, b any) {
		data, err := transport.Encode(transport.Header{Job: job, Kind: kind, From: "forger", Seq: seq}, b)
		if err == nil {
			err = tr.Publish(context.Background(), assignSubject(job, "w0"), data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	claim := func() { send(1, kindClaim, claimBody{Base: job, Epoch: 1, ReleaseAfterMs: 60000}) }
	claim()
	again := time.NewTicker(100 * time.Millisecond) // until the worker listens
	defer again.Stop()
	claimed := false
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-deadline:
			t.Fatalf("%s: no answer from the worker", job)
		case <-again.C:
			if !claimed {
				claim()
			}
		case data := <-got:
			h, raw, err := transport.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			switch h.Kind {
			case kindClaimed:
				var c claimedBody
				if err := transport.DecodeBody(raw, &c); err != nil || !c.Granted {
					t.Fatalf("%s: claim not granted (%+v, %v)", job, c, err)
				}
				if !claimed {
					claimed = true
					send(2, kindAssign, body)
				}
			case kindReady:
				var r readyBody
				if err := transport.DecodeBody(raw, &r); err != nil {
					t.Fatal(err)
				}
				if !r.Received {
					send(3, kindRelease, releaseBody{})
					return r.Err
				}
			}
		}
	}
}
