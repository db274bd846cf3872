package remote

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// A forged open whose spec names a model outside the worker's
// directories (absolute, through "..", through a link) is answered with
// an error that names no path, and a worker without directories loads no
// part at all.
func TestForgedOpenConfined(t *testing.T) {
	c := shard.NewConfinement(t)
	models, secret, files := c.Models, c.Secret, c.Dirs
	tr := transport.NewInProc()
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, f := range map[string]shard.Dirs{"w0": files, "w1": {}} {
		go func() { _ = Serve(ctx, tr, WorkerOptions{Name: name, Files: f}) }()
	}
	for i, c := range []struct{ worker, path, want string }{
		{"w0", secret, "outside this worker's"},
		{"w0", models + "/../outside/secret.ddx", "not an absolute clean path"},
		{"w0", filepath.Join(models, "link.ddx"), "outside this worker's"},
		{"w1", filepath.Join(models, "link.ddx"), "--state-dir"},
	} {
		job := "forged" + string(rune('a'+i))
		spec, err := (&shard.Spec{Path: c.path, Size: 12345, NumVars: 4, To: 1}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan openedBody, 4)
		sub, err := tr.Subscribe(answerSubject(job, c.worker), func(_ string, data []byte) {
			var o openedBody
			if h, raw, err := transport.Decode(data); err == nil && h.Kind == kindOpened && transport.DecodeBody(raw, &o) == nil {
				got <- o
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		data, err := transport.Encode(transport.Header{Job: job, Kind: kindOpen, From: "forger", Seq: 1}, openBody{CID: 9, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		var o openedBody
		deadline := time.After(10 * time.Second)
	wait:
		for {
			if err := tr.Publish(ctx, orderSubject(job, c.worker), data); err != nil { // until the worker listens
				t.Fatal(err)
			}
			select {
			case o = <-got:
				break wait
			case <-time.After(200 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: no answer", c.path)
			}
		}
		sub.Unsubscribe()
		if !strings.Contains(o.Err, c.want) || strings.ContainsRune(o.Err, '/') || strings.Contains(o.Err, "12345") {
			t.Errorf("%s on %s: %q, want a refusal saying %q without a path or a size", c.path, c.worker, o.Err, c.want)
		}
	}
}
