package dsearch

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/internal/ratelimit"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// Options configure a distributed search.
type Options struct {
	// Job names the search (a transport.ValidName): it namespaces the
	// subjects.
	Job string
	// Workers is how many workers the search uses (>= 1); it starts with
	// the first that answer and takes others as they come, up to Workers.
	Workers int
	// Wait bounds how long the search goes on without any worker (at the
	// start, or after losing them all) before it fails (default 30s).
	Wait time.Duration
	// Settings choose the node solver the workers run.
	Settings Settings
	// Tol, TimeLimit and MaxNodes bound the whole search as in
	// exact.Options (Threads has no meaning here: each worker solves one
	// node at a time on its threads).
	Tol       float64
	TimeLimit time.Duration
	MaxNodes  int
	// SliceNodes and SliceTime bound each subtree a worker searches
	// before it answers (defaults 64 nodes, 2s). While fewer nodes are
	// open than Workers, subtrees get a few nodes only, so that the tree
	// fans out to all of them.
	SliceNodes int
	SliceTime  time.Duration
	// LostAfter: a worker silent this long is lost and its subtree goes
	// back to the queue (default 3s).
	LostAfter time.Duration
	Logger    *slog.Logger
	// Seed, when not nil, is what an earlier phase found (run's
	// distributed relaxation): the search starts from it.
	Seed *Seed
	// MaxEntries bounds the tables of RunFile's model file (0:
	// model.DefaultMaxEntries), as the workers' WorkerOptions.MaxEntries
	// bounds what they read.
	MaxEntries int
}

// Seed is a search's starting point.
type Seed struct {
	// Assignment (nil: none) is the first incumbent: it must respect the
	// evidence and score above -Inf on the model, which re-scores it
	// (a claimed score is not taken).
	Assignment []int
	// Bound is a valid upper bound on the best score under the evidence
	// (+Inf: none): the root's bound, so every node's, and so the
	// search's.
	Bound float64
}

// check re-scores the seed's assignment on g under ev.
func (s *Seed) check(g ground, ev model.Evidence) (float64, error) {
	if math.IsNaN(s.Bound) {
		return 0, fmt.Errorf("seed: bound NaN")
	}
	if s.Assignment == nil {
		return math.Inf(-1), nil
	}
	x := s.Assignment
	if len(x) != g.numVars() {
		return 0, fmt.Errorf("seed: assignment of %d variables, model has %d", len(x), g.numVars())
	}
	for v, st := range ev {
		if v < 0 || v >= len(x) || x[v] != st {
			return 0, fmt.Errorf("seed: the assignment does not respect the evidence on variable %d", v)
		}
	}
	sc, err := g.score(x)
	if err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	if math.IsInf(sc, -1) || math.IsNaN(sc) {
		return 0, fmt.Errorf("seed: assignment scores %v", sc)
	}
	return sc, nil
}

func (o *Options) defaults() error {
	if err := transport.ValidName(o.Job); err != nil {
		return fmt.Errorf("job %q: %w", o.Job, err)
	}
	if o.Workers < 1 {
		return fmt.Errorf("workers: %d < 1", o.Workers)
	}
	if err := o.Settings.Validate(); err != nil {
		return err
	}
	if err := (&exact.Options{Tol: o.Tol, TimeLimit: o.TimeLimit, MaxNodes: o.MaxNodes}).Validate(); err != nil {
		return err
	}
	switch {
	case o.SliceNodes < 0 || o.SliceNodes > maxTaskNodes:
		return fmt.Errorf("SliceNodes %d: want 0 to %d", o.SliceNodes, maxTaskNodes)
	case o.SliceTime < 0 || o.SliceTime > maxSlice || o.Wait < 0 || o.LostAfter < 0:
		return fmt.Errorf("negative or too long durations")
	}
	if o.Wait == 0 {
		o.Wait = 30 * time.Second
	}
	if o.SliceNodes == 0 {
		o.SliceNodes = 64
	}
	if o.SliceTime == 0 {
		o.SliceTime = 2 * time.Second
	}
	if o.LostAfter == 0 {
		o.LostAfter = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Stats describes a distributed search.
type Stats struct {
	Nodes, Pruned, Open int
	Iterations          int
	// Subtrees is the number of subtrees answered, Requeued those given
	// back to the queue (lost workers, rejected answers), Rejected the
	// answers rejected, Workers the workers that took part.
	Subtrees, Requeued, Rejected, Workers int
}

// node is an open node: its clamps (sorted by variable) and bound.
type node struct {
	vars, states transport.Int32s
	bound        float64
	depth        int
}

// Rank orders the node in the queue.
func (n *node) Rank() exact.Rank { return exact.Rank{Bound: n.bound, Depth: n.depth} }

type queue = exact.Queue[*node]

type wstate int

const (
	opening wstate = iota
	idle
	busy
)

// cworker is a worker as the coordinator sees it.
type cworker struct {
	name    string
	state   wstate
	heard   time.Time // its last message
	joined  time.Time // when it acknowledged the job
	sent    time.Time // the open or the task, when last sent
	task    *task
	resends int
	// took is the last task whose answer the search took from it, done
	// the last its heartbeats say it answered (confirm.go).
	took, done uint64
}

type task struct {
	id     uint64
	n      *node
	ev     model.Evidence
	nodes  int // its node budget
	sentAt time.Time
}

// event is a message that passed its checks, for the coordinator's loop.
type event struct {
	kind   transport.Kind
	worker string
	job    string // hello: the job the worker holds
	cid    uint64
	err    string
	busy   busyBody
	answer *answerBody
	digest answerDigest // the answer's encoded body's
}

// coord is one search's coordinator.
type coord struct {
	ctx     context.Context
	tr      transport.Transport
	g       ground
	ev      model.Evidence
	opts    Options
	log     *slog.Logger
	seq     *transport.Sequence
	cid     uint64
	open    []byte // the encoded open message body's fields, minus the cid
	events  chan event
	done    chan struct{} // closed when the loop ends
	drop    ratelimit.Repeats[string]
	start   time.Time
	nextID  uint64
	q       queue
	workers map[string]*cworker
	refused map[string]time.Time
	// everyone who took part
	seen     map[string]bool
	hellos   transport.Newest // the workers' hellos heard: a replayed one is not news
	noneFrom time.Time        // since when the search has had no worker
	refusal  string           // the last refusal of the job ("": none), said when no worker came
	res      solver.Result
	st       Stats
	progress func(solver.Progress)
	openMsg  openBody
	// sealed: the transport seals (a job key); ans, the answers heard and
	// taken (confirm.go).
	sealed bool
	ans    answers
}

// Run searches m under evidence ev with the workers that serve on tr
// (Serve), and returns what exact.SolveWarm would: Optimal when the gap is
// closed, otherwise the valid bound of what is left and why the search
// stopped. progress, when not nil, is called after every subtree answered
// (Nodes: solved so far, Open: open nodes and subtrees in flight).
//
// It fails when no worker serves it for opts.Wait, or when a worker's node
// solver fails (the same subtree would fail anywhere), returning what it
// has so far with the error.
func Run(ctx context.Context, tr transport.Transport, m *model.Model, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	if err := opts.defaults(); err != nil {
		return solver.Result{}, Stats{}, err
	}
	var buf bytes.Buffer
	if err := native.Write(&buf, m, native.Msgpack); err != nil {
		return solver.Result{}, Stats{}, fmt.Errorf("encoding the model: %w", err)
	}
	return run(ctx, tr, onModel(m), ev, opts, openBody{Model: buf.Bytes()}, progress)
}

// RunFile is Run on the indexed model file at path (.ddx, an absolute
// path every worker can open: a shared filesystem), which the workers read
// themselves, each the whole model: this process holds nothing that grows
// with the model but the incumbent assignment (which one answer carries,
// so no larger than the transport's largest message). It checks the file
// (its header, block index and structure checksum) and re-scores the
// seed's and the answers' assignments streaming from it (indexed's
// Scanner.Score: one pass over the file per assignment that beats the
// incumbent); a worker reads the file only when its size and structure
// checksum are the ones this process checked.
func RunFile(ctx context.Context, tr transport.Transport, path string, ev model.Evidence, opts Options, progress func(solver.Progress)) (solver.Result, Stats, error) {
	if err := opts.defaults(); err != nil {
		return solver.Result{}, Stats{}, err
	}
	if !filepath.IsAbs(path) || filepath.Ext(path) != indexed.Ext {
		return solver.Result{}, Stats{}, fmt.Errorf("model file %s: not an absolute path to an indexed (%s) file", path, indexed.Ext)
	}
	g, err := openFile(path, opts.MaxEntries)
	if err != nil {
		return solver.Result{}, Stats{}, fmt.Errorf("model file: %w", err)
	}
	defer g.close()
	return run(ctx, tr, g, ev, opts, openBody{File: path, Size: g.s.Size(), CRC: g.s.StructureCRC()}, progress)
}

// run is Run and RunFile on the model g, which o (the open message, minus
// its CID, settings and clamps) hands to the workers.
func run(ctx context.Context, tr transport.Transport, g ground, ev model.Evidence, opts Options, o openBody, progress func(solver.Progress)) (solver.Result, Stats, error) {
	root, primal := math.Inf(1), math.Inf(-1)
	if s := opts.Seed; s != nil {
		var err error
		if primal, err = s.check(g, ev); err != nil {
			return solver.Result{}, Stats{}, err
		}
		root = s.Bound
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := &coord{ctx: ctx, tr: tr, g: g, ev: ev, opts: opts, log: opts.Logger.With("job", opts.Job), seq: transport.NewSequence(),
		cid: binary.LittleEndian.Uint64(b[:]) | 1, events: make(chan event, 256), done: make(chan struct{}), drop: ratelimit.Repeats[string]{Every: 10 * time.Second},
		start: time.Now(), workers: map[string]*cworker{}, refused: map[string]time.Time{}, seen: map[string]bool{},
		res:      solver.Result{Status: solver.IterationLimit, Primal: math.Inf(-1), Dual: math.Inf(1), Relaxed: math.NaN()},
		progress: progress, sealed: transport.IsSealed(tr)}
	c.noneFrom = c.start
	if !math.IsInf(primal, -1) {
		c.res.Primal, c.res.Assignment = primal, slices.Clone(opts.Seed.Assignment)
	}
	vars, states := clamps(ev)
	o.CID, o.Settings, o.Vars, o.States = c.cid, opts.Settings, vars, states
	c.openMsg = o
	heap.Push(&c.q, &node{vars: vars, states: states, bound: root, depth: len(ev)})

	hellos, err := tr.Subscribe(helloSubject, c.onHello)
	if err != nil {
		return c.res, c.st, fmt.Errorf("subscribing for workers: %w", err)
	}
	defer hellos.Unsubscribe()
	answers, err := tr.Subscribe(answersWildcard(opts.Job), c.onAnswer)
	if err != nil {
		return c.res, c.st, fmt.Errorf("subscribing for answers: %w", err)
	}
	defer answers.Unsubscribe()
	defer c.closeAll()
	c.send(solicitSubject, solicitBody{})
	err = c.loop()
	if err == nil && c.over() {
		err = c.confirm()
	}
	close(c.done)
	c.finish()
	return c.res, c.st, err
}

// rejected logs a message dropped for reason, rate-limited per reason.
func (c *coord) rejected(reason string, args ...any) {
	if n, ok := c.drop.Admit(reason); ok {
		c.log.Warn("search: "+reason, append(args, "dropped", n+1)...)
	}
}

func (c *coord) send(subject string, body transport.Body) {
	data, err := transport.Encode(transport.Header{Job: c.opts.Job, From: "", Seq: c.seq.Next()}, body)
	if err == nil {
		err = c.tr.Publish(c.ctx, subject, data)
	}
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn("search: publishing", "subject", subject, "err", err)
	}
}

// post hands an event to the loop (handlers run on the transport's
// goroutines).
func (c *coord) post(e event) {
	select {
	case c.events <- e:
	case <-c.done:
	case <-c.ctx.Done():
	}
}

func (c *coord) onHello(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil || h.Kind != kindHello {
		c.rejected("undecodable hello dropped", "err", err)
		return
	}
	var b helloBody
	if err := transport.DecodeBody(raw, &b); err != nil || transport.ValidName(h.From) != nil {
		c.rejected("malformed hello dropped", "err", err)
		return
	}
	if !c.hellos.Admit(h.From, h.Seq) {
		c.rejected("hello not newer than its sender's last dropped (replayed)", "worker", h.From)
		return
	}
	c.post(event{kind: kindHello, worker: h.From, job: b.Job})
}

// onAnswer checks a worker's message (its sender is the worker its
// subject names) and posts it; the answers' contents are checked by the
// loop against the task they answer.
func (c *coord) onAnswer(subject string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		c.rejected("undecodable answer dropped", "err", err)
		return
	}
	if h.Job != c.opts.Job || h.From == "" || subject != answerSubject(c.opts.Job, h.From) {
		c.rejected("answer from another worker than its subject's dropped", "subject", subject, "from", h.From)
		return
	}
	e := event{kind: h.Kind, worker: h.From}
	switch h.Kind {
	case kindOpened:
		var b openedBody
		err = transport.DecodeBody(raw, &b)
		e.cid, e.err = b.CID, b.Err
	case kindBusy:
		err = transport.DecodeBody(raw, &e.busy)
		e.cid = e.busy.CID
	case kindAnswer:
		e.answer = new(answerBody)
		err = transport.DecodeBody(raw, e.answer)
		e.cid = e.answer.CID
		e.digest = sha256.Sum256(raw)
	default:
		err = fmt.Errorf("unknown kind %v", h.Kind)
	}
	if err != nil {
		c.rejected("malformed answer dropped", "worker", h.From, "err", err)
		return
	}
	if e.cid != c.cid {
		c.rejected("answer to another coordinator dropped", "worker", h.From)
		return
	}
	if e.answer != nil {
		// Every answer, also one to a task already answered: two that
		// differ are a forgery (confirm.go).
		c.ans.hear(h.From, e.answer.ID, e.digest)
	}
	c.post(e)
}

// loop runs the search until it ends.
func (c *coord) loop() error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastBeat, lastSolicit := time.Time{}, time.Time{}
	var deadline <-chan time.Time
	if c.opts.TimeLimit > 0 {
		t := time.NewTimer(c.opts.TimeLimit)
		defer t.Stop()
		deadline = t.C
	}
	for {
		if c.over() {
			return nil
		}
		if c.limited() {
			if c.inflight() == 0 {
				c.res.Status = solver.IterationLimit
				return nil
			}
		} else {
			c.dispatch()
		}
		select {
		case <-c.ctx.Done():
			c.res.Status = solver.Interrupted
			return nil
		case <-deadline:
			c.res.Status = solver.TimeLimit
			return nil
		case e := <-c.events:
			if err := c.handle(e); err != nil {
				return err
			}
		case now := <-tick.C:
			if now.Sub(lastBeat) >= beatEvery {
				c.send(beatSubject(c.opts.Job), beatBody{CID: c.cid})
				lastBeat = now
			}
			if len(c.workers) < c.opts.Workers && now.Sub(lastSolicit) >= 2*helloEvery {
				c.send(solicitSubject, solicitBody{})
				lastSolicit = now
			}
			c.checkWorkers(now)
			if len(c.workers) == 0 && now.Sub(c.noneFrom) > c.opts.Wait {
				if c.refusal != "" {
					return fmt.Errorf("search %s: no worker for %v (%d nodes solved); the last refusal: %s", c.opts.Job, c.opts.Wait, c.st.Nodes, c.refusal)
				}
				return fmt.Errorf("search %s: no worker for %v (%d nodes solved)", c.opts.Job, c.opts.Wait, c.st.Nodes)
			}
		}
	}
}

func (c *coord) closed(bound float64) bool { return solver.Closed(bound, c.res.Primal, c.opts.Tol) }

// over reports whether the search is done: nothing open can beat the
// incumbent and nothing is in flight.
func (c *coord) over() bool {
	return c.inflight() == 0 && (len(c.q) == 0 || c.closed(c.q[0].bound))
}

// limited reports whether the node limit stops handing out subtrees.
func (c *coord) limited() bool {
	return c.opts.MaxNodes > 0 && c.st.Nodes+c.budgetOut() >= c.opts.MaxNodes
}

func (c *coord) inflight() int {
	n := 0
	for _, w := range c.workers {
		if w.task != nil {
			n++
		}
	}
	return n
}

func (c *coord) budgetOut() int {
	n := 0
	for _, w := range c.workers {
		if w.task != nil {
			n += w.task.nodes
		}
	}
	return n
}

// bound is the search's valid upper bound: the largest of the open
// nodes', the subtrees' in flight and the incumbent.
func (c *coord) bound() float64 {
	b := c.res.Primal
	if len(c.q) > 0 {
		b = math.Max(b, c.q[0].bound)
	}
	for _, w := range c.workers {
		if w.task != nil {
			b = math.Max(b, w.task.n.bound)
		}
	}
	return b
}

// dispatch hands the best open nodes to the idle workers.
func (c *coord) dispatch() {
	var names []string
	for name, w := range c.workers {
		if w.state == idle {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if len(c.q) == 0 || c.closed(c.q[0].bound) {
			return
		}
		budget := c.opts.SliceNodes
		if len(c.q) < c.opts.Workers {
			// Fan out: while there are fewer open nodes than workers,
			// subtrees come back after a few nodes.
			budget = min(budget, 4)
		}
		if c.opts.MaxNodes > 0 {
			budget = min(budget, c.opts.MaxNodes-c.st.Nodes-c.budgetOut())
			if budget <= 0 {
				return
			}
		}
		slice := c.opts.SliceTime
		if c.opts.TimeLimit > 0 {
			slice = min(slice, max(c.opts.TimeLimit-time.Since(c.start), time.Millisecond))
		}
		n := heap.Pop(&c.q).(*node)
		ev, _ := evidence(c.g, n.vars, n.states) // ours: valid
		c.nextID++
		c.ans.issue(c.nextID)
		w := c.workers[name]
		w.task = &task{id: c.nextID, n: n, ev: ev, nodes: budget, sentAt: time.Now()}
		w.state, w.sent, w.resends = busy, time.Now(), 0
		c.sendTask(w, slice)
	}
}

func (c *coord) sendTask(w *cworker, slice time.Duration) {
	t := w.task
	inc := c.res.Primal
	c.send(taskSubject(c.opts.Job, w.name), taskBody{CID: c.cid, ID: t.id, Vars: t.n.vars, States: t.n.states,
		Bound: t.n.bound, Incumbent: inc, Tol: c.opts.Tol, MaxNodes: t.nodes, SliceMs: max(slice.Milliseconds(), 1),
		Root: c.st.Subtrees == 0 && t.id == 1})
}

// handle takes one checked message into the search.
func (c *coord) handle(e event) error {
	now := time.Now()
	w := c.workers[e.worker]
	switch e.kind {
	case kindHello:
		if w != nil {
			w.heard = now
			if e.job != c.opts.Job && w.state != opening && now.Sub(w.joined) > 4*helloEvery {
				// It dropped the job (restarted, or released it).
				c.lose(w, "it no longer holds the job")
			}
			return nil
		}
		if e.job != "" || len(c.workers) >= c.opts.Workers || now.Sub(c.refused[e.worker]) < 5*time.Second {
			return nil
		}
		w = &cworker{name: e.worker, state: opening, heard: now, sent: now}
		c.workers[e.worker] = w
		c.send(taskSubject(c.opts.Job, w.name), c.openMsg)
	case kindOpened:
		if w == nil || w.state != opening {
			return nil
		}
		w.heard = now
		if e.err != "" {
			c.log.Warn("search: a worker refused the job", "worker", w.name, "reason", e.err)
			delete(c.workers, w.name)
			c.refused[w.name] = now
			c.refusal = w.name + ": " + firstLine(e.err) // a refusal is no worker: the wait goes on counting
			return nil
		}
		w.state, w.joined = idle, now
		if !c.seen[w.name] {
			c.seen[w.name] = true
			c.st.Workers++
		}
		c.log.Info("search: worker joined", "worker", w.name)
	case kindBusy:
		if w == nil {
			return nil
		}
		w.heard = now
		w.done = max(w.done, e.busy.Done)
		if t := w.task; t != nil && e.busy.Current != t.id && now.Sub(w.sent) > time.Second {
			// The task or its answer was lost (the worker is not on it):
			// send it again; the worker repeats a lost answer.
			if w.resends++; w.resends > 5 {
				c.lose(w, "it does not take its task")
				return nil
			}
			w.sent = now
			c.sendTask(w, c.opts.SliceTime)
		}
	case kindAnswer:
		if w == nil || w.task == nil || e.answer.ID != w.task.id {
			return nil // stale: a task given up or answered before
		}
		w.heard = now
		return c.file(w, e.answer, e.digest)
	}
	return nil
}

// file takes an answer to w's task: checked, re-scored, its open nodes
// queued. A wrong answer is rejected and its worker dropped.
func (c *coord) file(w *cworker, a *answerBody, d answerDigest) error {
	t := w.task
	if a.Err != "" {
		return fmt.Errorf("search %s: worker %s: node solver: %s", c.opts.Job, w.name, firstLine(a.Err))
	}
	x, score, open, err := checkAnswer(c.g, a, t.ev, t.n.bound)
	if err != nil {
		c.st.Rejected++
		c.log.Warn("search: answer rejected, its subtree requeued and its worker dropped", "worker", w.name, "task", t.id, "reason", err.Error())
		c.lose(w, "its answer was rejected")
		return nil
	}
	c.ans.take(w.name, t.id, d)
	w.task, w.state, w.took = nil, idle, t.id
	c.st.Subtrees++
	c.st.Nodes += a.Nodes
	c.st.Pruned += a.Pruned
	c.st.Iterations += a.Iterations
	c.res.Iterations += a.Iterations
	if x != nil && score > c.res.Primal {
		c.res.Primal, c.res.Assignment = score, x
	}
	for _, n := range open {
		if c.closed(n.bound) || math.IsInf(n.bound, -1) {
			c.st.Pruned++
			continue
		}
		heap.Push(&c.q, &n)
	}
	c.report()
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// lose drops a worker from the search: its subtree goes back to the
// queue with its bound.
func (c *coord) lose(w *cworker, why string) {
	if t := w.task; t != nil {
		heap.Push(&c.q, t.n)
		c.st.Requeued++
		c.log.Warn("search: worker lost, its subtree requeued", "worker", w.name, "why", why, "task", t.id)
	} else {
		c.log.Warn("search: worker lost", "worker", w.name, "why", why)
	}
	c.send(taskSubject(c.opts.Job, w.name), closeBody{CID: c.cid})
	delete(c.workers, w.name)
	c.refused[w.name] = time.Now()
	if len(c.workers) == 0 {
		c.noneFrom = time.Now()
	}
}

// checkWorkers loses silent workers and re-sends opens not answered.
func (c *coord) checkWorkers(now time.Time) {
	for _, w := range c.workers {
		switch {
		case now.Sub(w.heard) > c.opts.LostAfter:
			c.lose(w, fmt.Sprintf("silent for %v", now.Sub(w.heard).Round(time.Millisecond)))
		case w.state == opening && now.Sub(w.sent) > time.Second:
			w.sent = now
			c.send(taskSubject(c.opts.Job, w.name), c.openMsg)
		}
	}
}

func (c *coord) report() {
	if c.progress == nil {
		return
	}
	b := c.bound()
	c.progress(solver.Progress{Iteration: c.res.Iterations, Dual: b, Primal: c.res.Primal, Gap: b - c.res.Primal,
		Elapsed: time.Since(c.start), Nodes: c.st.Nodes, Open: len(c.q) + c.inflight()})
}

// finish sets the result from the search's state.
func (c *coord) finish() {
	c.res.Dual = c.bound()
	c.st.Open = len(c.q) + c.inflight()
	if c.over() {
		if math.IsInf(c.res.Primal, -1) {
			c.res.Status = solver.Infeasible
		} else {
			c.res.Status = solver.Optimal
		}
		c.st.Open = 0
	}
	c.res.Gap = c.res.Dual - c.res.Primal
	c.res.Elapsed = time.Since(c.start)
}

// closeAll frees the workers.
func (c *coord) closeAll() {
	ctx := c.ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
	}
	for _, w := range c.workers {
		data, err := transport.Encode(transport.Header{Job: c.opts.Job, Seq: c.seq.Next()}, closeBody{CID: c.cid})
		if err == nil {
			_ = c.tr.Publish(ctx, taskSubject(c.opts.Job, w.name), data)
		}
	}
	_ = c.tr.Flush(ctx)
}
