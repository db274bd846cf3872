package transport

// The message bodies of the distributed runtime. They are examples of the
// shapes the runtime exchanges and will be refined with it; the runtime may
// also define its own bodies (any msgpack-encodable struct, with a Kind from
// KindUser up). Fields use short msgpack keys; unknown keys are skipped on
// decoding, so fields can be added without a wire version change. Vectors
// are Floats and Int32s, which travel as raw little-endian bins.

// Hello registers a worker on ControlSubject. Its header's Job is empty.
type Hello struct {
	Name    string `msgpack:"name"`    // worker name, a ValidName
	Threads int    `msgpack:"threads"` // goroutines it will use
	// Job is the job the worker serves ("" when idle) and Iter the last
	// iteration it answered there: a coordinator taking a job over learns
	// from them which workers it can take and how far its predecessor got.
	Job  string `msgpack:"job,omitempty"`
	Iter int    `msgpack:"iter,omitempty"`
}

// Assign hands a worker its part of the job on AssignSubject.
type Assign struct {
	Worker string `msgpack:"worker"` // the worker the part is for
	Part   int    `msgpack:"part"`   // index of the part, 0 <= Part < Parts
	Parts  int    `msgpack:"parts"`  // number of parts in the job
	Model  []byte `msgpack:"model"`  // the part of the model, encoded by the runtime; opaque here
	Slaves Int32s `msgpack:"slaves"` // the slaves the worker owns
	Vars   Int32s `msgpack:"vars"`   // global ids of the variables its slaves touch
}

// Step is the coordinator's per-iteration broadcast on StepSubject.
type Step struct {
	Eta    float64 `msgpack:"eta"`    // ADMM penalty
	Lambda Floats  `msgpack:"lambda"` // multipliers
	Mu     Floats  `msgpack:"mu"`     // consensus (averaged) marginals
	X      Int32s  `msgpack:"x"`      // current best assignment, or nil
	Stop   bool    `msgpack:"stop"`   // the job is over; the worker should release its part
}

// Report is a worker's answer to a Step on ReportSubject.
type Report struct {
	Nu        Floats  `msgpack:"nu"`      // the worker's slave marginals
	Dual      float64 `msgpack:"dual"`    // its contribution to the dual value
	Relaxed   float64 `msgpack:"relaxed"` // its contribution to the relaxed objective
	PrimalRes float64 `msgpack:"pres"`    // primal residual contribution
	DualRes   float64 `msgpack:"dres"`    // dual residual contribution
	Score     float64 `msgpack:"score"`   // score contribution of the decoded assignment
}

// Heartbeat tells that its sender is alive; the header says where it is.
type Heartbeat struct{}

func (Hello) Kind() Kind     { return KindHello }
func (Assign) Kind() Kind    { return KindAssign }
func (Step) Kind() Kind      { return KindStep }
func (Report) Kind() Kind    { return KindReport }
func (Heartbeat) Kind() Kind { return KindHeartbeat }
