package remote

import (
	"math"
	"testing"
	"time"

	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/transport"
)

// TestChecks: orders and answers of the wrong shape or with NaN / +Inf
// are refused; -Inf (a dead state) passes.
func TestChecks(t *testing.T) {
	good := stepBody{Delta: []float64{0, math.Inf(-1), 1}, HasDelta: true, Iters: 1, States: []int32{0}, HasStates: true}
	if _, err := checkStep(&good, 3, 1); err != nil {
		t.Fatal(err)
	}
	for i, bad := range []stepBody{
		{Delta: []float64{0, 1}, HasDelta: true, Iters: 1},
		{Delta: []float64{0, math.NaN(), 1}, HasDelta: true, Iters: 1},
		{Delta: []float64{0, math.Inf(1), 1}, HasDelta: true, Iters: 1},
		{Iters: -1},
		{Iters: maxIters + 1},
		{Sweeps: -1},
		{States: []int32{0, 1}, HasStates: true},
	} {
		if _, err := checkStep(&bad, 3, 1); err == nil {
			t.Errorf("order %d accepted", i)
		}
	}
	in := &dtrws.StepIn{Iters: 1, States: []int32{0}}
	var out dtrws.StepOut
	ok := steppedBody{Bound: 1, Beliefs: []float64{0, math.Inf(-1), 2}, Chains: []int32{1}, Score: 3, Local: []float64{1, 2, 3}}
	if err := checkStepped(&ok, in, 3, 1, &out); err != nil || out.Bound != 1 || len(out.Local) != 3 {
		t.Fatal(err)
	}
	for i, bad := range []steppedBody{
		{Bound: math.NaN(), Beliefs: []float64{0, 1, 2}, Chains: []int32{1}, Local: []float64{1, 2, 3}},
		{Bound: 1, Beliefs: []float64{0, 1}, Chains: []int32{1}, Local: []float64{1, 2, 3}},
		{Bound: 1, Beliefs: []float64{0, 1, math.NaN()}, Chains: []int32{1}, Local: []float64{1, 2, 3}},
		{Bound: 1, Beliefs: []float64{0, 1, 2}, Chains: []int32{0}, Local: []float64{1, 2, 3}},
		{Bound: 1, Beliefs: []float64{0, 1, 2}, Chains: []int32{1}, Score: math.Inf(1), Local: []float64{1, 2, 3}},
		{Bound: 1, Beliefs: []float64{0, 1, 2}, Chains: []int32{1}, Local: []float64{1, 2}},
		{Err: "lost"},
	} {
		if err := checkStepped(&bad, in, 3, 1, &out); err == nil {
			t.Errorf("answer %d accepted", i)
		}
	}
}

// FuzzOrder: a worker's decoding and checking of an order never panics,
// and an accepted order has the part's shape.
func FuzzOrder(f *testing.F) {
	for _, b := range []stepBody{
		{CID: 1, Seq: 2, Delta: []float64{0, 1, 2}, HasDelta: true, Iters: 1, States: []int32{1}, HasStates: true},
		{CID: 1, Seq: 3, Iters: 0, Keep: true},
	} {
		data, err := transport.Encode(transport.Header{Job: "j", From: "c"}, b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, raw, err := transport.Decode(data)
		if err != nil || h.Kind != kindStep {
			return
		}
		var b stepBody
		if transport.DecodeBody(raw, &b) != nil {
			return
		}
		in, err := checkStep(&b, 3, 1)
		if err != nil {
			return
		}
		if in.Delta != nil && len(in.Delta) != 3 || in.States != nil && len(in.States) != 1 || in.Iters < 0 || in.Sweeps < 0 {
			t.Errorf("accepted an order of the wrong shape: %+v", in)
		}
	})
}

// A worker's announcement replayed after a newer one is not news: the
// coordinator's record of when it last heard the worker stays that of the
// newer one, so a recorded hello does not keep a dead worker looking
// alive.
func TestReplayedHelloDropped(t *testing.T) {
	c := &coordinator{free: map[string]bool{}, seen: map[string]time.Time{}, found: make(chan struct{}, 1)}
	hello := func(seq uint64) []byte {
		b, err := transport.Encode(transport.Header{From: "w1", Seq: seq}, helloBody{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old := hello(10)
	c.onHello(helloSubject, old)
	c.onHello(helloSubject, hello(11))
	heard := c.seen["w1"]
	time.Sleep(time.Millisecond)
	c.onHello(helloSubject, old) // the replay
	if !c.seen["w1"].Equal(heard) {
		t.Errorf("a replayed hello moved the worker's last announcement from %v to %v", heard, c.seen["w1"])
	}
	if _, ok := c.free["w1"]; !ok {
		t.Errorf("the worker's news hellos were not heard")
	}
}
