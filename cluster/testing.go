package cluster

// This file is the package's test harness, in non-test code (as
// hashicorp/raft's testing.go) so that the tests of this package and of
// others share it: workers of this package in the test's process, over
// the in-process transport or as clients of a NATS server, and the ways a
// test disturbs them (a worker killed, paused, gone mute or hung as its
// part arrives, a coordinator cut off). It knows the protocol only as far
// as a mute worker must speak it.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// TestClusterOptions configures a TestCluster.
type TestClusterOptions struct {
	// Transport is what the workers and coordinators use; nil: a new
	// in-process transport (transport.InProc), closed when the test ends.
	Transport transport.Transport
	// NATS, when not nil, makes every worker and coordinator a client of
	// its own (as a process of its own would be) to the NATS server at
	// NATS.URL, named after it, closed when the test ends.
	NATS *transport.NATSOptions
	// Worker is every worker's options but its Name (Threads 0: 1). With
	// LoadShard the workers serve sharded parts; Sharded sets it up.
	Worker WorkerOptions
}

// TestCluster runs workers of this package inside a test's process, each
// until the test ends or the test kills it. Its methods may be called from
// any goroutine (a run's progress callback kills and starts workers), and
// report a failure through the test.
type TestCluster struct {
	t      testing.TB
	tr     transport.Transport // nil with NATS
	nats   *transport.NATSOptions
	worker WorkerOptions

	mu     sync.Mutex
	stops  map[string]func()    // the workers running, by name
	gates  map[string]*pausable // their transports, by name (Pause)
	closes []func() error       // the transports it opened
}

// NewTestCluster returns a cluster with no workers yet, cleaned up when t
// ends: every worker stopped, then the transports it opened closed.
func NewTestCluster(t testing.TB, o TestClusterOptions) *TestCluster {
	c := &TestCluster{t: t, tr: o.Transport, nats: o.NATS, worker: o.Worker, stops: map[string]func(){}, gates: map[string]*pausable{}}
	if c.tr == nil && c.nats == nil {
		tr := transport.NewInProc()
		c.tr, c.closes = tr, []func() error{tr.Close}
	}
	if c.worker.Threads < 1 {
		c.worker.Threads = 1
	}
	t.Cleanup(func() {
		c.StopAll()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, closeTr := range c.closes {
			_ = closeTr()
		}
	})
	return c
}

// Sharded makes the workers started from now on serve sharded parts:
// loadShard builds a part from its spec, and their states go to package
// shard's state files (so a sharded run can take checkpoints) in one
// state directory of the test that all of them share.
func (c *TestCluster) Sharded(loadShard func(context.Context, []byte) (*consensus.Part, error)) *TestCluster {
	dir := c.t.TempDir()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker.LoadShard, c.worker.ShardStates = loadShard, shard.StateFiles{Dir: dir}
	return c
}

// Workers names the workers started (killed ones too), in no order.
func (c *TestCluster) Workers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.stops))
	for name := range c.stops {
		names = append(names, name)
	}
	return names
}

// Transport is the transport of a coordinator named name: the cluster's
// one, or with NATS a new client named name (called from the test's
// goroutine then: a failure to connect ends the test).
func (c *TestCluster) Transport(name string) transport.Transport {
	if c.nats == nil {
		return c.tr
	}
	o := *c.nats
	o.Name = name
	tr, err := transport.NewNATS(context.Background(), o)
	if err != nil {
		c.t.Fatalf("connecting %s: %v", name, err)
	}
	c.mu.Lock()
	c.closes = append(c.closes, tr.Close)
	c.mu.Unlock()
	return tr
}

// Start starts a worker of each name with the cluster's options.
func (c *TestCluster) Start(names ...string) *TestCluster {
	for _, name := range names {
		c.mu.Lock()
		o := c.worker
		c.mu.Unlock()
		o.Name = name
		c.StartWith(o)
	}
	return c
}

// StartN starts n workers named prefix0, prefix1, ...
func (c *TestCluster) StartN(prefix string, n int) *TestCluster {
	for i := range n {
		c.Start(fmt.Sprintf("%s%d", prefix, i))
	}
	return c
}

// StartWith starts a worker with options o (Threads 0: 1), for a test that
// watches a worker's hooks or log.
func (c *TestCluster) StartWith(o WorkerOptions) {
	if o.Threads < 1 {
		o.Threads = 1
	}
	tr := &pausable{Transport: c.Transport(o.Name)}
	c.mu.Lock()
	c.gates[o.Name] = tr
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := Serve(ctx, tr, o); err != nil {
			c.t.Errorf("worker %s: %v", o.Name, err)
		}
	}()
	c.add(o.Name, func() { cancel(); <-done })
}

// add records a running worker's stop function, once per name.
func (c *TestCluster) add(name string, stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.stops[name]; dup {
		c.t.Errorf("two workers named %s", name)
	}
	c.stops[name] = sync.OnceFunc(stop)
}

// Kill stops worker name as if its process died: from the moment Kill
// returns it answers nothing and sends no heartbeat. A worker killed
// already is left alone.
func (c *TestCluster) Kill(name string) {
	c.mu.Lock()
	stop, ok := c.stops[name]
	c.mu.Unlock()
	if !ok {
		c.t.Errorf("kill %s: no such worker", name)
		return
	}
	stop()
}

// Pause makes worker name (one Start started) go silent for d, as a
// process starved on a loaded machine: what it publishes waits until d
// has passed, and so do the messages it receives; then it goes on where
// it stopped. It returns at once.
func (c *TestCluster) Pause(name string, d time.Duration) {
	c.mu.Lock()
	p, ok := c.gates[name]
	c.mu.Unlock()
	if !ok {
		c.t.Errorf("pause %s: no such worker", name)
		return
	}
	gate := make(chan struct{})
	p.gate.Store(&gate)
	time.AfterFunc(d, func() {
		p.gate.Store(nil)
		close(gate)
	})
}

// pausable is a worker's transport that Pause holds up.
type pausable struct {
	transport.Transport
	gate atomic.Pointer[chan struct{}] // closed when the pause ends; nil: none
}

// wait returns when no pause holds the worker up, or ctx ends.
func (p *pausable) wait(ctx context.Context) {
	if g := p.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
		}
	}
}

// Publish waits out a pause.
func (p *pausable) Publish(ctx context.Context, subject string, data []byte) error {
	p.wait(ctx)
	return p.Transport.Publish(ctx, subject, data)
}

// Subscribe delivers to h after a pause.
func (p *pausable) Subscribe(subject string, h transport.Handler) (transport.Subscription, error) {
	return p.Transport.Subscribe(subject, func(subj string, data []byte) {
		p.wait(context.Background())
		h(subj, data)
	})
}

// StopAll stops every worker (as the test's end does): what a worker's
// hooks report is complete once it returns.
func (c *TestCluster) StopAll() {
	c.mu.Lock()
	stops := make([]func(), 0, len(c.stops))
	for _, stop := range c.stops {
		stops = append(stops, stop)
	}
	c.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// StartMute starts a worker that announces itself like an idle one and
// grants claims until it is assigned a part, then goes silent: no receipt,
// no heartbeat, no acknowledgement (a process that hung or died as the
// part arrived). The returned channel is closed when its first part
// arrives.
func (c *TestCluster) StartMute(name string) (assigned <-chan struct{}) {
	return c.startSilent(name, false)
}

// StartHung starts a worker like StartMute's that goes on announcing itself
// as idle and granting claims once it is assigned a part (its service
// goroutines still run), but never takes one.
func (c *TestCluster) StartHung(name string) (assigned <-chan struct{}) {
	return c.startSilent(name, true)
}

func (c *TestCluster) startSilent(name string, hung bool) <-chan struct{} {
	c.t.Helper()
	tr := c.Transport(name)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{})
	var gotOnce sync.Once
	seq := transport.NewSequence()
	sub, err := tr.Subscribe(assignWildcard(name), func(_ string, data []byte) {
		h, _, err := transport.Decode(data)
		if err != nil {
			return
		}
		select {
		case <-got:
			if !hung {
				return // silent
			}
		default:
		}
		switch h.Kind {
		case kindClaim:
			grant, err := transport.Encode(transport.Header{Job: h.Job, From: name, Seq: seq.Next(), Kind: kindClaimed}, claimedBody{Granted: true})
			if err == nil {
				_ = tr.Publish(ctx, reportSubject(h.Job, name), grant)
			}
		case kindAssign:
			gotOnce.Do(func() { close(got) })
		}
	})
	if err != nil {
		cancel()
		c.t.Fatalf("worker %s: %v", name, err)
	}
	if _, err := transport.Encode(transport.Header{Kind: kindHello, From: name}, helloBody{Name: name, Threads: 1}); err != nil {
		cancel()
		c.t.Fatalf("worker %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(helloEvery)
		defer tick.Stop()
		stop := (<-chan struct{})(got)
		if hung {
			stop = nil // announces itself until it is stopped
		}
		for {
			// Numbered like a worker's: an older one is a replay.
			if hello, err := transport.Encode(transport.Header{Kind: kindHello, From: name, Seq: seq.Next()}, helloBody{Name: name, Threads: 1}); err == nil {
				_ = tr.Publish(ctx, controlSubject, hello)
			}
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	c.add(name, func() { cancel(); <-done; _ = sub.Unsubscribe() })
	return got
}

// Coordinator returns the transport of a coordinator named name (see
// Transport) that the test can cut off (Severable.Sever), as when its
// process dies.
func (c *TestCluster) Coordinator(name string) *Severable {
	return &Severable{Transport: c.Transport(name)}
}

// Severable is a coordinator's view of a transport that can be cut off:
// once severed, nothing it sends arrives and nothing reaches it.
type Severable struct {
	transport.Transport
	cut atomic.Bool
}

// Sever cuts the coordinator off.
func (s *Severable) Sever() { s.cut.Store(true) }

// Severed tells whether Sever was called.
func (s *Severable) Severed() bool { return s.cut.Load() }

// Publish drops data once severed.
func (s *Severable) Publish(ctx context.Context, subject string, data []byte) error {
	if s.cut.Load() {
		return errors.New("severed")
	}
	return s.Transport.Publish(ctx, subject, data)
}

// Subscribe delivers to h only while not severed.
func (s *Severable) Subscribe(subject string, h transport.Handler) (transport.Subscription, error) {
	return s.Transport.Subscribe(subject, func(subj string, data []byte) {
		if !s.cut.Load() {
			h(subj, data)
		}
	})
}

// ShardedRun is what a sharded job run by RunSharded ended with.
type ShardedRun struct {
	Result solver.Result
	Stats  RunStats
	// X is the assignment delivered, in the model's variables, and
	// Delivered how many variables' states arrived (each once: NumVars).
	X         []int
	Delivered int
}

// RunSharded runs a sharded job (layout, its parts' states under
// stateDir) on the cluster's workers (see Sharded) through RunJob, with a
// coordinator named "coordinator", and collects the assignment it
// delivers.
func (c *TestCluster) RunSharded(ctx context.Context, layout *shard.Layout, stateDir string, opts consensus.Options, ro RunOptions, progress func(solver.Progress)) (ShardedRun, error) {
	out := ShardedRun{X: make([]int, layout.NumVars)}
	deliver := func(ctx context.Context, a *ShardAssignment) error {
		return a.Pieces(ctx, func(vars []int, states []int32) error {
			for k, v := range vars {
				out.X[v] = int(states[k])
			}
			out.Delivered += len(vars)
			return nil
		})
	}
	o, err := RunJob(ctx, Job{Transport: c.Transport("coordinator"), Shards: layout, StateDir: stateDir, Deliver: deliver,
		Options: opts, Run: ro, Progress: progress})
	out.Result, out.Stats = o.Result, o.Stats
	return out, err
}
