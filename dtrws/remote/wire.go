package remote

import (
	"fmt"
	"math"

	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/transport"
)

// Subjects of distributed TRW-S, beside the job protocol's (package
// cluster) and the search's (package dsearch), never matching their
// wildcards:
//
//	ddrun.tw.hello                  hello                 workers -> coordinators
//	ddrun.tw.solicit                solicit               coordinators -> workers
//	ddrun.<job>.tw.order.<worker>   open, step, labels, close  coordinator -> one worker
//	ddrun.<job>.tw.answer.<worker>  opened, stepped, labelled  worker -> coordinator
const (
	helloSubject   = "ddrun.tw.hello"
	solicitSubject = "ddrun.tw.solicit"
)

func orderSubject(job, worker string) string  { return "ddrun." + job + ".tw.order." + worker }
func orderWildcard(worker string) string      { return "ddrun.*.tw.order." + worker }
func answerSubject(job, worker string) string { return "ddrun." + job + ".tw.answer." + worker }
func answersWildcard(job string) string       { return "ddrun." + job + ".tw.answer.*" }

// Message kinds: cluster numbers its 1, 5 and 64 to 73, dsearch 96 up.
const (
	kindHello    transport.Kind = 112
	kindSolicit  transport.Kind = 113
	kindOpen     transport.Kind = 114
	kindOpened   transport.Kind = 115
	kindStep     transport.Kind = 116
	kindStepped  transport.Kind = 117
	kindLabels   transport.Kind = 118
	kindLabelled transport.Kind = 119
	kindClose    transport.Kind = 120
)

// Bounds on what an order may ask.
const (
	maxIters  = 1 << 16
	maxSweeps = 1 << 10
)

type (
	// helloBody announces a worker, with the job it holds ("": free).
	helloBody struct {
		Job string `msgpack:"job,omitempty"`
	}
	solicitBody struct{}
	// openBody hands a worker its part: the spec (shard's wire form) and
	// the number of parts holding each of its boundary variables. CID is
	// the coordinator's random id, which every later message carries.
	openBody struct {
		CID    uint64           `msgpack:"cid"`
		Spec   []byte           `msgpack:"spec"`
		Copies transport.Int32s `msgpack:"copies"`
	}
	// openedBody acknowledges an open: the part's shape, or Err.
	openedBody struct {
		CID   uint64 `msgpack:"cid"`
		Width int    `msgpack:"w"`
		Count int    `msgpack:"n"`
		Vars  int    `msgpack:"vars"`
		Err   string `msgpack:"err,omitempty"`
	}
	// stepBody is a dtrws.StepIn; Seq numbers the job's orders.
	stepBody struct {
		CID       uint64           `msgpack:"cid"`
		Seq       uint64           `msgpack:"seq"`
		Delta     transport.Floats `msgpack:"d"`
		HasDelta  bool             `msgpack:"hd"`
		Iters     int              `msgpack:"it"`
		Keep      bool             `msgpack:"k"`
		States    transport.Int32s `msgpack:"s"`
		HasStates bool             `msgpack:"hs"`
		Polish    bool             `msgpack:"p"`
		Sweeps    int              `msgpack:"sw"`
	}
	// steppedBody is a dtrws.StepOut, or Err.
	steppedBody struct {
		CID     uint64           `msgpack:"cid"`
		Seq     uint64           `msgpack:"seq"`
		Bound   float64          `msgpack:"b"`
		Beliefs transport.Floats `msgpack:"bel"`
		Chains  transport.Int32s `msgpack:"ch"`
		Score   float64          `msgpack:"sc"`
		Local   transport.Floats `msgpack:"loc"`
		Err     string           `msgpack:"err,omitempty"`
	}
	// labelsBody asks for the part's kept labels from its From-th
	// variable on (From 0 takes them anew); labelledBody answers with
	// at most labelPiece of its variables (global, increasing) from
	// there and their labels, Last on the piece that ends the part.
	labelsBody struct {
		CID  uint64 `msgpack:"cid"`
		Seq  uint64 `msgpack:"seq"`
		From int32  `msgpack:"f,omitempty"`
	}
	labelledBody struct {
		CID    uint64           `msgpack:"cid"`
		Seq    uint64           `msgpack:"seq"`
		From   int32            `msgpack:"f,omitempty"`
		Last   bool             `msgpack:"l,omitempty"`
		Vars   transport.Int32s `msgpack:"v"`
		Labels transport.Int32s `msgpack:"x"`
		Err    string           `msgpack:"err,omitempty"`
	}
	closeBody struct {
		CID uint64 `msgpack:"cid"`
	}
)

// labelPiece is the most variables a labelled answer carries (512 KiB of
// variables and labels). A variable for the tests only.
var labelPiece = 1 << 16

// labelWindow is how many labels orders the coordinator keeps
// outstanding per worker: it holds at most that many pieces (2 MiB) per
// worker, below the answers' queue (gather's inbox of 8) and the
// worker's orders queue (16), so that none is dropped for space.
const labelWindow = 4

func (helloBody) Kind() transport.Kind    { return kindHello }
func (solicitBody) Kind() transport.Kind  { return kindSolicit }
func (openBody) Kind() transport.Kind     { return kindOpen }
func (openedBody) Kind() transport.Kind   { return kindOpened }
func (stepBody) Kind() transport.Kind     { return kindStep }
func (steppedBody) Kind() transport.Kind  { return kindStepped }
func (labelsBody) Kind() transport.Kind   { return kindLabels }
func (labelledBody) Kind() transport.Kind { return kindLabelled }
func (closeBody) Kind() transport.Kind    { return kindClose }

// finiteOrDead reports whether every entry is finite or -Inf.
func finiteOrDead(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 1) {
			return false
		}
	}
	return true
}

// checkStep checks an order from the network against the part's shape
// (width states over count copies) and returns it as a dtrws.StepIn.
func checkStep(s *stepBody, width, count int) (dtrws.StepIn, error) {
	in := dtrws.StepIn{Iters: s.Iters, Keep: s.Keep, Polish: s.Polish, Sweeps: s.Sweeps}
	switch {
	case s.Iters < 0 || s.Iters > maxIters:
		return in, fmt.Errorf("%d iterations outside [0, %d]", s.Iters, maxIters)
	case s.Sweeps < 0 || s.Sweeps > maxSweeps:
		return in, fmt.Errorf("%d sweeps outside [0, %d]", s.Sweeps, maxSweeps)
	case s.HasDelta && len(s.Delta) != width:
		return in, fmt.Errorf("%d multiplier changes for %d boundary states", len(s.Delta), width)
	case s.HasDelta && !finiteOrDead(s.Delta):
		return in, fmt.Errorf("a multiplier change is NaN or +Inf")
	case s.HasStates && len(s.States) != count:
		return in, fmt.Errorf("%d boundary states for %d copies", len(s.States), count)
	}
	if s.HasDelta {
		in.Delta = s.Delta
	}
	if s.HasStates {
		in.States = s.States
		if in.States == nil {
			in.States = []int32{}
		}
	}
	return in, nil
}

// checkStepped checks a worker's answer to the order in and copies it
// into out.
func checkStepped(a *steppedBody, in *dtrws.StepIn, width, count int, out *dtrws.StepOut) error {
	if a.Err != "" {
		return fmt.Errorf("the worker failed: %s", a.Err)
	}
	if in.Iters > 0 {
		if len(a.Beliefs) != width || len(a.Chains) != count || math.IsNaN(a.Bound) || !finiteOrDead(a.Beliefs) {
			return fmt.Errorf("%d beliefs and %d chain counts for %d states of %d copies, bound %v", len(a.Beliefs), len(a.Chains), width, count, a.Bound)
		}
		for _, c := range a.Chains {
			if c < 1 {
				return fmt.Errorf("chain count %d", c)
			}
		}
	} else if len(a.Beliefs) != 0 || len(a.Chains) != 0 {
		return fmt.Errorf("beliefs for an order without passes")
	}
	if in.States != nil {
		if len(a.Local) != width || math.IsNaN(a.Score) || math.IsInf(a.Score, 1) || !finiteOrDead(a.Local) {
			return fmt.Errorf("%d local scores for %d states, score %v", len(a.Local), width, a.Score)
		}
	}
	out.Bound, out.Score = a.Bound, a.Score
	out.Beliefs = append(out.Beliefs[:0], a.Beliefs...)
	out.Chains = append(out.Chains[:0], a.Chains...)
	out.Local = append(out.Local[:0], a.Local...)
	return nil
}
