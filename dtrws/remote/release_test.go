package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// A job closed while its part loads, then opened again under the same
// name: when the first load fails on its closed context, its release must
// not drop the second job, which is no longer the first one's to drop.
func TestStaleJobReleasesOnlyItself(t *testing.T) {
	tr := transport.NewInProc()
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loading := make(chan int32, 4)
	staleFails := make(chan struct{})
	var loads atomic.Int32
	receive := func(ctx context.Context, _ *shard.Spec) (func(), error) {
		n := loads.Add(1)
		loading <- n
		<-ctx.Done()
		if n == 1 {
			<-staleFails // the first load fails once the second job is open
		}
		return nil, errors.New("load stopped: " + ctx.Err().Error())
	}
	go func() { _ = Serve(ctx, tr, WorkerOptions{Name: "w0", Receive: receive}) }()
	const job = "same"
	spec, err := (&shard.Spec{Path: "/m.ddx", Size: 1, NumVars: 4, To: 1}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	answers := make(chan openedBody, 8)
	sub, err := tr.Subscribe(answerSubject(job, "w0"), func(_ string, data []byte) {
		var o openedBody
		if h, raw, err := transport.Decode(data); err == nil && h.Kind == kindOpened && transport.DecodeBody(raw, &o) == nil {
			answers <- o
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	var seq uint64
	send := func(kind transport.Kind, body any) {
		seq++
		data, err := transport.Encode(transport.Header{Job: job, Kind: kind, From: "coordinator", Seq: seq}, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Publish(ctx, orderSubject(job, "w0"), data); err != nil {
			t.Fatal(err)
		}
	}
	waitLoad := func(want int32) {
		t.Helper()
		for {
			send(kindOpen, openBody{CID: uint64(want), Spec: spec}) // until the worker listens
			select {
			case n := <-loading:
				if n != want {
					t.Fatalf("load %d, want %d", n, want)
				}
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	waitLoad(1)
	send(kindClose, closeBody{CID: 1})
	time.Sleep(50 * time.Millisecond) // the close is taken
	waitLoad(2)
	close(staleFails)
	deadline := time.After(500 * time.Millisecond)
	for {
		select {
		case o := <-answers:
			if o.CID == 2 { // the first job's own refusal may come; the second's may not
				t.Fatalf("the second job answered %q while its part still loads: the stale load released it", o.Err)
			}
		case <-deadline:
			return
		}
	}
}
