package cluster

import (
	"testing"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/transport"
)

// seedAssignments encodes real parts of a small split model.
func seedAssignments(t testing.TB) [][]byte {
	m := generate.Logic(generate.LogicOptions{Vars: 12, Factors: 6, Couplings: 8, MaxArity: 4, Rho: 1, Seed: 1})
	plan := partition.PerFactor(m)
	place := make([]int32, len(plan.Slaves))
	for s := range place {
		place[s] = int32(s % 2)
	}
	parts, _, err := consensus.Split(m, plan, place, 2)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for w, p := range parts {
		body, err := encodePart(p, w, 2, consensus.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		data, err := transport.Encode(transport.Header{Job: "j", Kind: kindAssign}, body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// A part survives its trip through the wire.
func TestPartRoundTrip(t *testing.T) {
	for _, data := range seedAssignments(t) {
		var a assignBody
		if _, err := transport.DecodeInto(data, &a); err != nil {
			t.Fatal(err)
		}
		p, err := decodePart(&a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := consensus.NewWorker(p, consensus.DefaultOptions()); err != nil {
			t.Fatalf("decoded part does not build: %v", err)
		}
	}
}

// A worker receiving a malformed assignment gets an error, never a panic,
// and a part that decodes builds its solver state or reports why not.
func FuzzDecodeAssignment(f *testing.F) {
	for _, data := range seedAssignments(f) {
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a assignBody
		if _, err := transport.DecodeInto(data, &a); err != nil {
			return
		}
		p, err := decodePart(&a)
		if err != nil {
			return
		}
		if w, err := consensus.NewWorker(p, consensus.DefaultOptions()); err == nil {
			w.Close()
		}
	})
}

// The kinds are the wire's: a change would make coordinators and workers
// of different builds misread each other.
func TestKindNumbers(t *testing.T) {
	for k, want := range map[transport.Kind]uint8{kindHello: 1, kindHeartbeat: 5, kindAssign: 64, kindReady: 65, kindStep: 66, kindReport: 67,
		kindClaim: 68, kindClaimed: 69, kindRelease: 70, kindBeat: 71} {
		if uint8(k) != want {
			t.Errorf("kind %d, want %d", k, want)
		}
	}
}

func TestSubjects(t *testing.T) {
	for got, want := range map[string]string{
		controlSubject:              "ddrun.control",
		assignSubject("j1", "w"):    "ddrun.j1.assign.w",
		assignWildcard("w"):         "ddrun.*.assign.w",
		stepSubject("j1", "w"):      "ddrun.j1.step.w",
		reportSubject("j1", "w"):    "ddrun.j1.report.w",
		reportsWildcard("j1"):       "ddrun.j1.report.*",
		heartbeatSubject("j1", "w"): "ddrun.j1.heartbeat.w",
		heartbeatsWildcard("j1"):    "ddrun.j1.heartbeat.*",
		beatSubject("j1"):           "ddrun.j1.beat",
		beatsWildcard:               "ddrun.*.beat",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// A block request's restricted domains (consensus.EvalIn.Dom, the tie
// kick) survive the wire beside its block.
func TestEvalBodyCarriesDomains(t *testing.T) {
	in := evalBody{Seq: 3, Op: uint8(consensus.EvalBlock), X: transport.Int32s{0, 2, 1}, Block: transport.Int32s{0, 2}, Dom: transport.Int32s{0, 1, 1, 3}, Coord: 7}
	data, err := transport.Encode(transport.Header{Job: "j", Kind: kindEval}, &in)
	if err != nil {
		t.Fatal(err)
	}
	var out evalBody
	if _, err := transport.DecodeInto(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Dom) != 4 || out.Dom[3] != 3 || len(out.Block) != 2 || out.Block[1] != 2 || out.Seq != 3 {
		t.Errorf("decoded %+v, sent %+v", out, in)
	}
}
