package cluster

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/transport"
)

// coordinator runs one epoch of a job (runEpoch, in run.go): its
// membership (membership.go: which worker holds which part, when each was
// last heard from, the spares that can take a lost worker's part) and its
// link to the workers over the transport (link.go: assignments, steps,
// reports, stop).
type coordinator struct {
	tr          transport.Transport
	job         string
	seq         *transport.Sequence
	timeout     time.Duration
	lostAfter   time.Duration
	waitSpare   time.Duration
	resendEvery time.Duration
	log         *slog.Logger
	bodies      []*assignBody // each part's assignment, kept for failover
	failovers   int
	restored    int
	base        string
	epoch       uint64
	joinable    func(job string) bool
	priorIter   int
	where       []int32 // the placement of the epoch
	claims      *claimer
	cid         uint64 // the epoch's coordinator id (assignBody.Coord)
	faults      *faultLog
	onStep      func(worker string, d time.Duration) // RunOptions.Hooks.Step

	mu       sync.Mutex // guards the fields below
	names    []string   // the worker holding each part
	byName   map[string]int
	lastSeen []time.Time
	beatSeq  []uint64              // the newest heartbeat's Seq of each part's worker
	spares   map[string]time.Time  // workers announcing themselves outside the job
	helloSeq transport.Newest      // the newest hello of each worker heard
	gone     map[string]lostWorker // workers lost by this run: spares only once they speak again
	// heardSeq is the highest Seq heard from each part's worker (any
	// message admitted as new), spoke whether it spoke in the job since
	// its part was sent (lostWorker).
	heardSeq []uint64
	spoke    []bool
	rejoined int              // workers lost earlier and taken back (RunStats.Rejoined)
	latest   *consensus.State // the latest checkpoint, nil before the first
	sent     int              // the highest iteration sent
	reports  []chan *reportBody
	filters  []*transport.Filter
	ready    []chan *readyBody
	// A sharded run's (shard.go): the answers to evaluations and fetches,
	// and each part's summary from its acknowledgement. No part of a
	// sharded run moves to a spare.
	evals     []chan *evaledBody
	summaries []*summaryWire
	// peakRSS is each worker's largest peak RSS (MiB) its evaluation
	// answers reported (guarded by mu).
	peakRSS []int64
	sharded bool
	// What defends a certificate (certificate.go): whether the transport
	// seals, the epoch's links, the reports heard per part and iteration
	// (guarded by mu), the first conflict among them, the longest a
	// worker took to answer a step (guarded by mu).
	sealed      bool
	linkList    []*remoteLink
	heard       []map[int]*heardIter
	conflict    *ConflictError
	slowestStep time.Duration
}

// index returns the part held by the named worker, or -1.
func (c *coordinator) index(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.byName[name]; ok {
		return w
	}
	return -1
}

// name returns the worker holding part w.
func (c *coordinator) name(w int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[w]
}

// latestState returns the latest checkpoint, nil before the first.
func (c *coordinator) latestState() *consensus.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// completed is the number of iterations the epoch completed.
func (c *coordinator) completed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.sent-1)
}
