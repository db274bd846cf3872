package dsearch

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/transport"
)

// Subjects of distributed branch and bound. They sit beside the job
// protocol's (package cluster) under "ddrun." and never match its
// wildcards (five tokens where its per-job subjects have four):
//
//	ddrun.bb.hello                hello                 workers -> coordinators
//	ddrun.bb.solicit              solicit               coordinators -> workers (announce yourselves now)
//	ddrun.<job>.bb.task.<worker>  open, task, close     coordinator -> one worker (it subscribes ddrun.*.bb.task.<worker>)
//	ddrun.<job>.bb.answer.<worker> opened, answer, busy  worker -> coordinator (it subscribes ddrun.<job>.bb.answer.*)
//	ddrun.<job>.bb.beat           beat                  coordinator -> its workers (they subscribe ddrun.*.bb.beat)
const (
	helloSubject   = "ddrun.bb.hello"
	solicitSubject = "ddrun.bb.solicit"
	beatsWildcard  = "ddrun.*.bb.beat"
)

func taskSubject(job, worker string) string   { return "ddrun." + job + ".bb.task." + worker }
func taskWildcard(worker string) string       { return "ddrun.*.bb.task." + worker }
func answerSubject(job, worker string) string { return "ddrun." + job + ".bb.answer." + worker }
func answersWildcard(job string) string       { return "ddrun." + job + ".bb.answer.*" }
func beatSubject(job string) string           { return "ddrun." + job + ".bb.beat" }

// Message kinds. The job protocol (package cluster) numbers its kinds 1,
// 5 and 64 to 73; these are 96 up and travel on their own subjects.
const (
	kindHello   transport.Kind = 96
	kindOpen    transport.Kind = 97
	kindOpened  transport.Kind = 98
	kindTask    transport.Kind = 99
	kindAnswer  transport.Kind = 100
	kindBusy    transport.Kind = 101
	kindClose   transport.Kind = 102
	kindBeat    transport.Kind = 103
	kindSolicit transport.Kind = 104
)

// helloBody announces a worker, with the search job it holds ("" when
// free).
type helloBody struct {
	Threads int    `msgpack:"threads"`
	Job     string `msgpack:"job,omitempty"`
}

// openBody hands a worker the model and the node solver's settings; CID
// is the coordinator's random id, which every later message of the job
// carries.
type openBody struct {
	CID      uint64   `msgpack:"cid"`
	Settings Settings `msgpack:"settings"`
	Model    []byte   `msgpack:"model"` // model/native msgpack
	// File, when Model is empty, is an indexed model file (an absolute
	// .ddx path) that the worker reads itself (RunFile), when its size is
	// Size and its structure's CRC-32C is CRC: the file the coordinator
	// checks the answers against.
	File string `msgpack:"file,omitempty"`
	Size int64  `msgpack:"size,omitempty"`
	CRC  uint32 `msgpack:"crc,omitempty"`
	// Evidence is the job's own evidence (Vars, States): every subtree
	// lies under it.
	Vars   transport.Int32s `msgpack:"v"`
	States transport.Int32s `msgpack:"s"`
}

// openedBody acknowledges an openBody: Err says why the worker could not
// take the job (busy with another, a model it cannot read).
type openedBody struct {
	CID uint64 `msgpack:"cid"`
	Err string `msgpack:"err,omitempty"`
}

// taskBody is a subtree to search: the node's clamps (Vars, States), its
// bound, the incumbent to beat and the budget.
type taskBody struct {
	CID       uint64           `msgpack:"cid"`
	ID        uint64           `msgpack:"id"`
	Vars      transport.Int32s `msgpack:"v"`
	States    transport.Int32s `msgpack:"s"`
	Bound     float64          `msgpack:"b"`
	Incumbent float64          `msgpack:"inc"`
	Tol       float64          `msgpack:"tol"`
	MaxNodes  int              `msgpack:"nodes"`
	SliceMs   int64            `msgpack:"ms"`
	Root      bool             `msgpack:"root,omitempty"`
}

// openWire is an open node of an answer.
type openWire struct {
	Vars   transport.Int32s `msgpack:"v"`
	States transport.Int32s `msgpack:"s"`
	Bound  float64          `msgpack:"b"`
}

// answerBody is a subtree's outcome: the assignment that beat the task's
// incumbent (X, scoring Primal; none when X is empty), the open nodes,
// and the counts; or Err, a node solver's failure.
type answerBody struct {
	CID        uint64           `msgpack:"cid"`
	ID         uint64           `msgpack:"id"`
	Primal     float64          `msgpack:"p"`
	X          transport.Int32s `msgpack:"x"`
	Open       []openWire       `msgpack:"open"`
	Nodes      int              `msgpack:"n"`
	Pruned     int              `msgpack:"pr"`
	Iterations int              `msgpack:"it"`
	Err        string           `msgpack:"err,omitempty"`
}

// busyBody is a worker's heartbeat while it holds a job: the task it is
// searching (0: none) and the last it answered.
type busyBody struct {
	CID     uint64 `msgpack:"cid"`
	Current uint64 `msgpack:"cur"`
	Done    uint64 `msgpack:"done"`
}

// closeBody ends the job on a worker; beatBody says its coordinator is
// alive.
type (
	closeBody struct {
		CID uint64 `msgpack:"cid"`
	}
	beatBody struct {
		CID uint64 `msgpack:"cid"`
	}
	solicitBody struct{}
)

func (helloBody) Kind() transport.Kind   { return kindHello }
func (openBody) Kind() transport.Kind    { return kindOpen }
func (openedBody) Kind() transport.Kind  { return kindOpened }
func (taskBody) Kind() transport.Kind    { return kindTask }
func (answerBody) Kind() transport.Kind  { return kindAnswer }
func (busyBody) Kind() transport.Kind    { return kindBusy }
func (closeBody) Kind() transport.Kind   { return kindClose }
func (beatBody) Kind() transport.Kind    { return kindBeat }
func (solicitBody) Kind() transport.Kind { return kindSolicit }

// Bounds on what a message may hold.
const (
	// maxOpen bounds the open nodes of one answer.
	maxOpen = 1 << 20
	// maxSlice bounds a task's time slice and maxTaskNodes its nodes.
	maxSlice     = time.Hour
	maxTaskNodes = 1 << 30
)

// clamps is a node's evidence as two sorted parallel vectors.
func clamps(ev model.Evidence) (vars, states transport.Int32s) {
	vars = make(transport.Int32s, 0, len(ev))
	for v := range ev {
		vars = append(vars, int32(v))
	}
	slices.Sort(vars)
	states = make(transport.Int32s, len(vars))
	for i, v := range vars {
		states[i] = int32(ev[int(v)])
	}
	return vars, states
}

// evidence checks clamps from the network against g (equal lengths,
// variables in range and each at most once, states within their
// variables' cardinalities) and returns them as evidence.
func evidence(g ground, vars, states transport.Int32s) (model.Evidence, error) {
	if len(vars) != len(states) {
		return nil, fmt.Errorf("%d clamped variables with %d states", len(vars), len(states))
	}
	n := g.numVars()
	if len(vars) > n {
		return nil, fmt.Errorf("%d clamps on %d variables", len(vars), n)
	}
	ev := make(model.Evidence, len(vars))
	for i, v := range vars {
		if v < 0 || int(v) >= n {
			return nil, fmt.Errorf("clamped variable %d out of range [0, %d)", v, n)
		}
		if _, dup := ev[int(v)]; dup {
			return nil, fmt.Errorf("variable %d clamped twice", v)
		}
		c, err := g.card(int(v))
		if err != nil {
			return nil, err
		}
		if s := states[i]; s < 0 || int(s) >= c {
			return nil, fmt.Errorf("variable %d clamped to state %d of %d", v, s, c)
		}
		ev[int(v)] = int(states[i])
	}
	return ev, nil
}

// under reports whether ev fixes everything parent does, as parent does.
func under(ev, parent model.Evidence) bool {
	for v, s := range parent {
		if t, ok := ev[v]; !ok || t != s {
			return false
		}
	}
	return true
}

// errRejected wraps every reason to reject a worker's answer.
var errRejected = errors.New("answer rejected")

// scoreTol is how far a claimed score may be from the coordinator's
// re-scoring of the same assignment on the same model: both sum the same
// float64 entries, so any difference beyond rounding is a lie or a bug.
func scoreTol(s float64) float64 { return 1e-9 * math.Max(1, math.Abs(s)) }

// checkAnswer checks an answer to task t (whose node is parent, with
// bound) against g: the assignment's states and its claimed score
// (re-scored, which is what the caller keeps), and every open node's
// clamps (valid, under parent, deeper) and bound (not NaN; clamped to the
// parent's, since a child's bound cannot exceed it). It returns the
// assignment (nil when none), its score and the open nodes.
func checkAnswer(g ground, a *answerBody, parent model.Evidence, bound float64) ([]int, float64, []node, error) {
	if a.Err != "" {
		return nil, 0, nil, nil
	}
	reject := func(format string, args ...any) ([]int, float64, []node, error) {
		return nil, 0, nil, fmt.Errorf("%w: %s", errRejected, fmt.Sprintf(format, args...))
	}
	if a.Nodes < 0 || a.Pruned < 0 || a.Iterations < 0 {
		return reject("negative counts (%d nodes, %d pruned, %d iterations)", a.Nodes, a.Pruned, a.Iterations)
	}
	if len(a.Open) > maxOpen {
		return reject("%d open nodes, more than %d", len(a.Open), maxOpen)
	}
	var x []int
	score := math.Inf(-1)
	if len(a.X) > 0 {
		if len(a.X) != g.numVars() {
			return reject("assignment of %d variables, model has %d", len(a.X), g.numVars())
		}
		x = make([]int, len(a.X))
		for i, s := range a.X {
			x[i] = int(s)
		}
		if !under(assignmentEvidence(x, parent), parent) {
			return reject("assignment outside its subtree")
		}
		var err error
		if score, err = g.score(x); err != nil {
			return reject("%v", err)
		}
		if math.IsNaN(a.Primal) || math.IsInf(score, -1) || math.Abs(score-a.Primal) > scoreTol(score) {
			return reject("assignment scores %v, claimed %v", score, a.Primal)
		}
	}
	open := make([]node, 0, len(a.Open))
	for i, o := range a.Open {
		if math.IsNaN(o.Bound) {
			return reject("open node %d: bound NaN", i)
		}
		ev, err := evidence(g, o.Vars, o.States)
		if err != nil {
			return reject("open node %d: %v", i, err)
		}
		if len(ev) <= len(parent) || !under(ev, parent) {
			return reject("open node %d is not below its subtree's root", i)
		}
		open = append(open, node{vars: o.Vars, states: o.States, bound: math.Min(o.Bound, bound), depth: len(ev)})
	}
	return x, score, open, nil
}

// assignmentEvidence is x restricted to parent's variables (a cheap way to
// ask under() whether x lies in parent's subtree).
func assignmentEvidence(x []int, parent model.Evidence) model.Evidence {
	ev := make(model.Evidence, len(parent))
	for v := range parent {
		ev[v] = x[v]
	}
	return ev
}
