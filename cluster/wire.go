package cluster

import (
	"bytes"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/partition"
	"github.com/ddrun/ddrun/transport"
)

// Message kinds of the job protocol. The numbers are the wire's and do not
// change: hello and heartbeat are 1 and 5, the others 64 up (from when
// package transport defined the first two and left 64 up to this one).
const (
	kindHello     transport.Kind = 1
	kindHeartbeat transport.Kind = 5
	kindAssign    transport.Kind = 64
	kindReady     transport.Kind = 65
	kindStep      transport.Kind = 66
	kindReport    transport.Kind = 67
	// Shared worker pools (pool.go): a coordinator claims a worker before
	// it assigns it a part, the worker grants or refuses the claim, the
	// coordinator releases what it does not need, and beats while its job
	// holds workers.
	kindClaim   transport.Kind = 68
	kindClaimed transport.Kind = 69
	kindRelease transport.Kind = 70
	kindBeat    transport.Kind = 71
	// Sharded runs (shard.go): the primal search and the fetching of the
	// best assignment, coordinator -> worker on its step subject, and the
	// answers on its report subject.
	kindEval   transport.Kind = 72
	kindEvaled transport.Kind = 73
)

// helloBody announces a worker on controlSubject, busy or not. Its
// header's Job is empty.
type helloBody struct {
	Name    string `msgpack:"name"`    // worker name, a transport.ValidName
	Threads int    `msgpack:"threads"` // goroutines it will use
	// Job is the job the worker serves ("" when idle) and Iter the last
	// iteration it answered there: a coordinator taking a job over learns
	// from them which workers it can take and how far its predecessor got.
	Job  string `msgpack:"job,omitempty"`
	Iter int    `msgpack:"iter,omitempty"`
	// Claimed is the job that claimed the worker and has not assigned it
	// a part yet ("" when none).
	Claimed string `msgpack:"claimed,omitempty"`
}

// claimBody asks a worker, on its assignment subject, to hold itself for
// the job of the header: granted only when the worker is idle and
// unclaimed, or when it serves or is claimed by an earlier epoch of the
// same Base (a new leader takes its predecessor's workers over). The claim
// lapses when the coordinator is silent (no beat, no step) for
// ReleaseAfterMs.
type claimBody struct {
	Base           string `msgpack:"base,omitempty"`
	Epoch          uint64 `msgpack:"epoch,omitempty"`
	ReleaseAfterMs int64  `msgpack:"release_ms"`
}

// claimedBody is a worker's answer to a claim, on its report subject.
type claimedBody struct {
	Granted bool `msgpack:"granted"`
	// Busy is the job holding the worker when the claim is refused.
	Busy string `msgpack:"busy,omitempty"`
}

// releaseBody gives a claimed worker back to the pool; beatBody says that
// the coordinator of the header's job is alive.
type (
	releaseBody struct{}
	beatBody    struct{}
)

// heartbeatBody tells that its sender is alive; the header says where it
// is.
type heartbeatBody struct{}

// assignBody hands a worker its part of a job.
type assignBody struct {
	Part     int              `msgpack:"part"`
	Parts    int              `msgpack:"parts"`
	Options  optionsWire      `msgpack:"opts"`
	Vars     transport.Int32s `msgpack:"vars"`
	Degree   transport.Int32s `msgpack:"deg"`
	Boundary transport.Int32s `msgpack:"bnd"`
	Slaves   []slaveWire      `msgpack:"slaves"`
	Model    []byte           `msgpack:"model"` // native msgpack encoding of the part's model
	// Base and Epoch identify the job across coordinators: an assignment
	// of the same Base with a higher Epoch (a new leader) preempts the
	// one a worker serves.
	Base  string `msgpack:"base,omitempty"`
	Epoch uint64 `msgpack:"epoch,omitempty"`
	// Coord is the random id of the coordinator's epoch: the worker takes
	// only steps (and the stop) that carry it. Next, when not 0, is the
	// iteration of the first step it will get.
	Coord uint64 `msgpack:"cid,omitempty"`
	Next  int    `msgpack:"next,omitempty"`
	// State, when set, is the part's replica state to start from (a
	// checkpoint); otherwise the part starts afresh.
	State *partStateWire `msgpack:"state,omitempty"`
	// Shard, when set, replaces Vars..Model: the part's spec in a sharded
	// run, opaque here (the worker's WorkerOptions.LoadShard reads it and
	// builds the part from the model file).
	Shard []byte `msgpack:"shard,omitempty"`
	// StateDir is the coordinator's state directory: a worker never uses
	// it as a path (it saves its states and finds StateRef's in its own,
	// WorkerOptions.ShardStates); it is kept on the wire for older
	// workers' sake and the coordinator's log. StateRef, when set,
	// is the sharded part's state to start from (its iteration is
	// Next-1), as the worker that saved it reported it.
	StateDir string `msgpack:"sdir,omitempty"`
	StateRef []byte `msgpack:"sref,omitempty"`
}

// partStateWire is consensus.PartState on the wire.
type partStateWire struct {
	Lambda transport.Floats `msgpack:"l"`
	Nu     transport.Floats `msgpack:"nu"`
	Mu     transport.Floats `msgpack:"mu"`
}

func wireState(st *consensus.PartState) *partStateWire {
	if st == nil {
		return nil
	}
	return &partStateWire{Lambda: st.Lambda, Nu: st.Nu, Mu: st.Mu}
}

func (p *partStateWire) state() *consensus.PartState {
	if p == nil {
		return nil
	}
	return &consensus.PartState{Lambda: p.Lambda, Nu: p.Nu, Mu: p.Mu}
}

type slaveWire struct {
	Shape   uint8            `msgpack:"s"`
	Vars    transport.Int32s `msgpack:"v"`
	Factors transport.Int32s `msgpack:"f"`
	Parent  transport.Int32s `msgpack:"p"`
}

// optionsWire carries the settings a worker needs (its thread count is its
// own).
type optionsWire struct {
	Algo string  `msgpack:"algo"`
	Tau  float64 `msgpack:"tau"`
}

// readyBody acknowledges an assignment: first its receipt (Received, so
// the coordinator stops re-sending while a big part is being built), then
// that the part is built, or why it could not be.
type readyBody struct {
	Received bool   `msgpack:"recv"`
	Err      string `msgpack:"err"`
	// Summary describes a sharded part once built.
	Summary *summaryWire `msgpack:"sum,omitempty"`
}

// summaryWire is consensus.PartSummary on the wire.
type summaryWire struct {
	ReplicaEntries int   `msgpack:"rep"`
	UnaryEntries   int   `msgpack:"un"`
	Interior       int   `msgpack:"int"`
	PeakRSSMB      int64 `msgpack:"rss"` // the worker's peak RSS once the part is built
}

// evalBody is consensus.EvalIn on the wire, or (Op opFetch) a request for
// piece Piece of the best assignment's interior. Coord is the sender's
// assignBody.Coord.
type evalBody struct {
	Seq    int              `msgpack:"seq"`
	Op     uint8            `msgpack:"op"`
	X      transport.Int32s `msgpack:"x"`
	Repair bool             `msgpack:"rep,omitempty"`
	Fixed  []bool           `msgpack:"fix,omitempty"`
	Piece  int              `msgpack:"piece,omitempty"`
	Iter   int              `msgpack:"it,omitempty"` // EvalSave's iteration
	// Allowed is EvalPropagate's (consensus.EvalIn.Allowed).
	Allowed []bool `msgpack:"al,omitempty"`
	// Block is EvalBlock's and EvalBlockApply's (consensus.EvalIn.Block).
	Block transport.Int32s `msgpack:"bk,omitempty"`
	// Dom restricts Block's variables to two states each
	// (consensus.EvalIn.Dom; checked by the worker, consensus.Worker.Evaluate).
	Dom   transport.Int32s `msgpack:"bd,omitempty"`
	Coord uint64           `msgpack:"cid"`
}

// opFetch asks for a piece of the best assignment (evalBody.Piece).
const opFetch = 100

// pieceVars is the most variables of one piece of the best assignment.
const pieceVars = 1 << 16

// evaledBody answers an evalBody: consensus.EvalOut, or a piece of the
// best assignment (the interior variables' numbers and states; Last says
// it is the last piece).
type evaledBody struct {
	Seq     int              `msgpack:"seq"`
	Before  float64          `msgpack:"b"`
	After   float64          `msgpack:"a"`
	X       transport.Int32s `msgpack:"x"`
	Settled bool             `msgpack:"ok,omitempty"`
	Vars    transport.Int32s `msgpack:"v,omitempty"`
	Last    bool             `msgpack:"last,omitempty"`
	Err     string           `msgpack:"err,omitempty"`
	// Ref answers EvalSave: the reference to the state saved, or empty
	// with SaveErr saying why it could not be saved.
	Ref     []byte `msgpack:"ref,omitempty"`
	SaveErr string `msgpack:"serr,omitempty"`
	// RSS is the worker's peak RSS (MiB) when it answered: the last
	// answers (the assignment's pieces) carry its peak over the run.
	RSS int64 `msgpack:"rss,omitempty"`
	// Gains, Pairs and PairGains answer EvalMoves, Gains EvalBlock and
	// Pairs EvalNear (consensus.EvalOut's).
	Gains     []float64        `msgpack:"g,omitempty"`
	Pairs     transport.Int32s `msgpack:"gp,omitempty"`
	PairGains []float64        `msgpack:"gpg,omitempty"`
	// Allowed answers EvalPropagate (consensus.EvalOut.Allowed).
	Allowed []bool `msgpack:"al,omitempty"`
}

// maxStateRef bounds a state reference a worker reports.
const maxStateRef = 1 << 10

// stepBody is consensus.StepIn on the wire; Stop ends the job. Coord is
// the sender's assignBody.Coord.
type stepBody struct {
	Iter     int              `msgpack:"i"`
	Eta      float64          `msgpack:"eta"`
	PrevStep float64          `msgpack:"ps"`
	Lambda   transport.Floats `msgpack:"l"`
	Mu       transport.Floats `msgpack:"mu"`
	GatherX  bool             `msgpack:"gx"`
	Save     bool             `msgpack:"sv,omitempty"`
	Stop     bool             `msgpack:"stop"`
	Coord    uint64           `msgpack:"cid,omitempty"`
}

// reportBody is consensus.StepOut on the wire.
type reportBody struct {
	Iter      int              `msgpack:"i"`
	Nu        transport.Floats `msgpack:"nu"`
	Dual      float64          `msgpack:"d"`
	Relaxed   float64          `msgpack:"r"`
	PrimalRes float64          `msgpack:"pr"`
	DualRes   float64          `msgpack:"dr"`
	Changed   bool             `msgpack:"c"`
	X         transport.Int32s `msgpack:"x"`
	State     *partStateWire   `msgpack:"st,omitempty"`
	Err       string           `msgpack:"err"`
	digest    reportDigest     // the encoded body's, set by the receiver (not on the wire)
}

func (helloBody) Kind() transport.Kind     { return kindHello }
func (heartbeatBody) Kind() transport.Kind { return kindHeartbeat }
func (assignBody) Kind() transport.Kind    { return kindAssign }
func (readyBody) Kind() transport.Kind     { return kindReady }
func (stepBody) Kind() transport.Kind      { return kindStep }
func (reportBody) Kind() transport.Kind    { return kindReport }
func (evalBody) Kind() transport.Kind      { return kindEval }
func (evaledBody) Kind() transport.Kind    { return kindEvaled }

func int32s(v []int) transport.Int32s {
	out := make(transport.Int32s, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func ints(v transport.Int32s) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// encodePart turns a part into an assignment.
func encodePart(p *consensus.Part, part, parts int, opts consensus.Options) (*assignBody, error) {
	var buf bytes.Buffer
	if err := native.Write(&buf, p.Model, native.Msgpack); err != nil {
		return nil, fmt.Errorf("encoding part %d: %w", part, err)
	}
	a := &assignBody{Part: part, Parts: parts,
		Options: optionsWire{Algo: string(opts.Algo), Tau: opts.Tau},
		Vars:    int32s(p.Vars), Degree: int32s(p.Degree), Boundary: int32s(p.Boundary),
		Model: buf.Bytes()}
	for _, sl := range p.Plan.Slaves {
		a.Slaves = append(a.Slaves, slaveWire{Shape: uint8(sl.Shape), Vars: int32s(sl.Vars), Factors: int32s(sl.Factors), Parent: int32s(sl.Parent)})
	}
	return a, nil
}

// decodePart rebuilds a part and checks it.
func decodePart(a *assignBody) (*consensus.Part, error) {
	m, err := native.Read(bytes.NewReader(a.Model), "assignment", native.Msgpack)
	if err != nil {
		return nil, err
	}
	p := &consensus.Part{Vars: ints(a.Vars), Model: m, Degree: ints(a.Degree), Boundary: ints(a.Boundary)}
	if len(p.Vars) != m.NumVars() || len(p.Degree) != m.NumVars() {
		return nil, fmt.Errorf("assignment: %d variables, %d ids and %d degrees", m.NumVars(), len(p.Vars), len(p.Degree))
	}
	for _, v := range p.Boundary {
		if v < 0 || v >= m.NumVars() {
			return nil, fmt.Errorf("assignment: boundary variable %d out of range", v)
		}
	}
	for _, sw := range a.Slaves {
		p.Plan.Slaves = append(p.Plan.Slaves, partition.Slave{Shape: partition.Shape(sw.Shape), Vars: ints(sw.Vars), Factors: ints(sw.Factors), Parent: ints(sw.Parent)})
	}
	if err := p.Plan.Validate(m); err != nil {
		return nil, fmt.Errorf("assignment: %w", err)
	}
	return p, nil
}

// Timings of the protocol.
const (
	helloEvery = 500 * time.Millisecond
	// resendEvery: an assignment or a step not answered within this time
	// is sent again (a message can be lost, e.g. to a slow-consumer cut).
	resendEvery = 10 * time.Second
	// readyAgainEvery: how often a worker repeats that its part is built
	// until the first step arrives.
	readyAgainEvery = 250 * time.Millisecond
	// heartbeatEvery: how often a worker busy with a job says it is alive.
	heartbeatEvery = 500 * time.Millisecond
	// beatEvery: how often a coordinator holding workers says it is alive.
	beatEvery = 500 * time.Millisecond
	// claimWait: how long a coordinator waits for the answer to a claim.
	claimWait = 2 * time.Second
)
