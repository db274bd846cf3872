package service

import (
	"net/http"
	"testing"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// Two services answer the NATS API of one server (its queue group), with
// the same job key, as the services of a cluster do. A recorded sealed
// submit replayed 40 times reaches both: remembered per service, it made
// one job on each; with the nonces in the server's JetStream bucket
// (NewKVNonces), it makes one job in the cluster, and each copy is
// answered with that job (200) by the service that holds it and 409 by
// the other. A fresh submit still makes a job.
func TestReplayedSubmitOneJobPerCluster(t *testing.T) {
	e := embeddedNATS(t, transport.EmbeddedOptions{JetStreamDir: t.TempDir()})
	seal := testSealer(t)
	cluster := func(shared bool) (svcs [2]*Service, stop func()) {
		var stops []func()
		for i := range svcs {
			g := &gateRunner{release: make(chan struct{})}
			close(g.release)
			o := Options{}
			nc := connect(t, e)
			if shared {
				var err error
				if o.Nonces, err = NewKVNonces(t.Context(), nc); err != nil {
					t.Fatal(err)
				}
			}
			svcs[i] = newTestService(t, g, o)
			stop, err := svcs[i].ServeNATS(nc, seal)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			stops = append(stops, stop, func() { _ = nc.Flush() })
		}
		return svcs, func() {
			for _, f := range stops {
				f()
			}
		}
	}
	client := connect(t, e)
	replay := func(svcs [2]*Service, nonce string) (jobs [2]int, codes map[int]int) {
		msg := sealedSubmit(t, seal, NATSRequest{Nonce: nonce, Sent: time.Now().UnixMilli()})
		codes = map[int]int{}
		for range 41 {
			codes[ask(t, client, seal, "submit", msg).Code]++
		}
		for i, s := range svcs {
			jobs[i] = len(s.List())
		}
		return jobs, codes
	}
	perService, stop := cluster(false)
	if jobs, codes := replay(perService, "0123456789abcdef0123"); jobs[0]+jobs[1] != 2 {
		t.Fatalf("nonces per service: %v jobs (replies %v), want one on each: the test does not reach both services", jobs, codes)
	}
	stop()

	svcs, _ := cluster(true)
	jobs, codes := replay(svcs, "0123456789abcdef0124")
	if jobs[0]+jobs[1] != 1 || codes[http.StatusCreated] != 1 || codes[http.StatusOK]+codes[http.StatusConflict] != 40 || codes[http.StatusConflict] == 0 {
		t.Fatalf("nonces in the bucket: jobs %v, replies %v; want one job, 201 once, then 200 and 409 from both services", jobs, codes)
	}
	if rep := ask(t, client, seal, "submit", sealedSubmit(t, seal, NATSRequest{Nonce: "0123456789abcdef0125", Sent: time.Now().UnixMilli()})); rep.Code != http.StatusCreated {
		t.Errorf("a fresh submit: %+v", rep)
	}
	if n := len(svcs[0].List()) + len(svcs[1].List()); n != 2 {
		t.Errorf("%d jobs after the replays and a fresh submit, want 2", n)
	}
	// Without JetStream on the server there is no bucket: the caller
	// (launch.Serve) says so and keeps to the per-service record.
	nc := connect(t, embeddedNATS(t, transport.EmbeddedOptions{}))
	if _, err := NewKVNonces(t.Context(), nc); err == nil {
		t.Error("a nonce bucket on a server without JetStream")
	}
}
