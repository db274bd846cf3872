package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// joinableFor returns the test of whether a worker serving job (its hello's
// Job) can join epoch e of base: idle workers, and those serving an earlier
// epoch of the same base (their coordinator is gone).
func joinableFor(base string, e uint64) func(job string) bool {
	return func(job string) bool {
		if job == "" {
			return true
		}
		if base == "" {
			return false
		}
		for old := uint64(0); old < e; old++ {
			if job == EpochJob(base, old) {
				return true
			}
		}
		return false
	}
}

// lostWorker is what a run remembers of a worker it lost (RunOptions.lost,
// coordinator.gone). A worker that never spoke in the job after its part
// was sent (no receipt, heartbeat or answer) is stuck: a process whose
// service takes claims but not parts (hung as its part arrived) would be
// lost again, so it is never taken back. A worker lost to silence alone
// (it spoke, then went quiet past LostAfter: killed, cut off, or starved
// on a loaded machine) is taken back when it speaks again: a hello
// numbered above heard, the highest sequence number the run had heard from
// it (a worker numbers every message from one Sequence, and under a job
// key the number is inside the seal, so neither a party without the key
// nor a replay of its recorded messages makes it speak again). It is then
// claimed like any new worker (free, and answering the claim) and takes a
// spare's place or, in a sharded run, its own part again. times counts the
// run's losses of it: after maxRejoins it is not taken back, so that a
// worker too slow for LostAfter does not end epoch after epoch.
type lostWorker struct {
	stuck bool
	heard uint64
	times int
	// taken: the worker was taken back since its last loss (counted and
	// logged once; a new loss writes a new record).
	taken bool
}

// maxRejoins bounds how many times a run takes back a worker it lost.
const maxRejoins = 3

// back reports whether a hello numbered seq brings the lost worker back.
func (l lostWorker) back(seq uint64) bool {
	return !l.stuck && l.times <= maxRejoins && seq > l.heard
}

// lostRecord is the record of the loss of the worker holding part w (its
// earlier losses in gone counted).
func (c *coordinator) lostRecord(w int) lostWorker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return lostWorker{stuck: !c.spoke[w], heard: c.heardSeq[w], times: c.gone[c.names[w]].times + 1}
}

// heardFrom records a message numbered seq from the worker holding part
// w, admitted as new (c.mu held); spoke says it came from its service of
// the job (a receipt, heartbeat or answer), not only its announcements.
func (c *coordinator) heardFrom(w int, seq uint64, spoke bool) {
	c.heardSeq[w] = max(c.heardSeq[w], seq)
	if spoke {
		c.spoke[w] = true
	}
}

// seen records that the worker holding part w was heard from just now.
func (c *coordinator) seen(w int) {
	c.mu.Lock()
	c.lastSeen[w] = time.Now()
	c.mu.Unlock()
}

// lost reports whether the worker holding part w has been silent for
// longer than lostAfter.
func (c *coordinator) lost(w int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastSeen[w]) > c.lostAfter
}

// onHeartbeat takes a heartbeat of the job as a sign of life of its sender,
// when it is the newest of its sender.
func (c *coordinator) onHeartbeat(_ string, data []byte) {
	h, _, err := transport.Decode(data)
	if err != nil || h.Job != c.job {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.byName[h.From]
	// Only a heartbeat newer than every earlier one of the worker (and than
	// its answer to the claim) is a sign of life: a replayed one is not.
	if !ok || h.Seq <= c.beatSeq[w] {
		return
	}
	c.beatSeq[w] = h.Seq
	c.lastSeen[w] = time.Now()
	c.heardFrom(w, h.Seq, true)
}

// decodeHello returns the hello in data when it is well formed, from the
// worker it names, and news: a worker numbers its hellos with its
// Sequence, inside the seal under a job key, so a hello counts only when
// its Seq is higher than every earlier one of its sender (seen): a
// recorded hello replayed later does not make a worker heard again.
func decodeHello(data []byte, seen *transport.Newest) (helloBody, uint64, bool) {
	var h helloBody
	hdr, err := transport.DecodeInto(data, &h)
	if err != nil || transport.ValidName(h.Name) != nil || hdr.From != h.Name {
		return h, 0, false
	}
	return h, hdr.Seq, seen.Admit(h.Name, hdr.Seq)
}

// onHello records workers that could take over a lost part: idle ones,
// and those lost by the run that speak again (lostWorker) once they no
// longer serve this epoch (a lost worker is told to stop).
func (c *coordinator) onHello(_ string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, seq, ok := decodeHello(data, &c.helloSeq)
	if !ok {
		return
	}
	w, busy := c.byName[h.Name]
	if busy {
		c.heardFrom(w, seq, false)
	}
	l, lost := c.gone[h.Name]
	if !busy && (!lost || l.back(seq) && h.Job != c.job) && (poolWorker{hello: h}).free(c.job, c.joinable) {
		c.spares[h.Name] = time.Now()
	} else {
		delete(c.spares, h.Name)
	}
}

// replace moves part w from a lost worker to a spare, which restarts the
// part from the latest checkpoint, or afresh before the first (zero
// multipliers on its interior: sum_a lambda_i^a = 0 still holds, so the
// dual stays valid; the coordinator keeps the boundary's). A checkpointed
// interior is older than the boundary; with DD-ADMM and tau = 1 one
// iteration restores sum_a lambda_i^a = 0 whatever lambda was (AD3 eq.
// 10-11: lambda^a += tau*eta*(nu^a - mu) with mu the replicas' mean plus
// the mean of lambda/eta), and the dual term of each slave is evaluated at
// re-centred multipliers anyway.
func (c *coordinator) replace(ctx context.Context, w int) (string, error) {
	old := c.name(w)
	c.mu.Lock()
	silent := time.Since(c.lastSeen[w]).Round(time.Millisecond)
	c.mu.Unlock()
	was := c.lostRecord(w)
	if c.sharded {
		// Every part returns to the latest checkpoint in a new epoch
		// (layout sharded): the best assignment's interior is spread over
		// the workers, and theirs must stay consistent with the restored
		// one.
		return "", &lostError{name: old, silent: silent, was: was}
	}
	// It is a member no longer: if it is only slow, it gives the job up
	// and may come back as a spare, even of this part (lostWorker).
	c.mu.Lock()
	if c.gone == nil {
		c.gone = map[string]lostWorker{}
	}
	c.gone[old] = was
	delete(c.byName, old)
	delete(c.spares, old)
	c.mu.Unlock()
	c.stopWorker(ctx, old)
	deadline := time.Now().Add(c.waitSpare)
	for {
		c.mu.Lock()
		spare := ""
		for name, at := range c.spares {
			// Only workers heard from recently; ties by name.
			if time.Since(at) < 3*helloEvery && (spare == "" || name < spare) {
				spare = name
			}
		}
		if spare != "" {
			delete(c.spares, spare)
			c.mu.Unlock()
			// The spare may be another job's by now: claim it first.
			if a, err := c.claims.claim(ctx, spare); err != nil {
				return "", err
			} else if !a.Granted {
				continue
			}
			c.mu.Lock()
			rec, back := c.gone[spare]
			back = back && !rec.taken // counted once (lostWorker.taken)
			if back {
				rec.taken = true
				c.gone[spare] = rec
			}
			c.names[w] = spare
			c.byName[spare] = w
			c.filters[w] = transport.NewFilter(c.job, transport.FilterOptions{})
			c.forget(w) // the spare's reports are its own
			c.beatSeq[w] = c.claims.answeredAt(spare)
			c.heardSeq[w], c.spoke[w] = c.beatSeq[w], false
			c.lastSeen[w] = time.Now()
			restored := c.latest != nil
			if restored {
				c.bodies[w].State = wireState(&c.latest.Parts[w])
			}
			c.bodies[w].Next = c.sent // the step in flight
			c.mu.Unlock()
			for len(c.reports[w]) > 0 {
				<-c.reports[w]
			}
			c.log.Warn("worker lost; its part moves to a spare", "lost", old, "silent", silent, "part", w, "spare", spare, "from_checkpoint", restored)
			if back {
				c.log.Info("a worker lost earlier spoke again: taken back as a spare", "worker", spare, "part", w)
			}
			c.mu.Lock() // replace runs from every worker's exchange
			if back {
				c.rejoined++
			}
			c.failovers++
			if restored {
				c.restored++
			}
			c.mu.Unlock()
			if err := c.assignOne(ctx, w); err != nil {
				return "", err
			}
			return spare, nil
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			return "", &lostError{name: old, silent: silent, noSpare: c.waitSpare, was: was}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lostError ends an epoch: a worker was lost, and no spare joined within
// noSpare to take its part (zero: a sharded run, whose parts never move to
// a spare within an epoch).
type lostError struct {
	name    string
	silent  time.Duration // since it was last heard from
	noSpare time.Duration
	was     lostWorker // what the run remembers of it
}

func (e *lostError) Error() string {
	if e.noSpare > 0 {
		return fmt.Sprintf("worker %s is lost and no spare worker joined within %v", e.name, e.noSpare)
	}
	return fmt.Sprintf("worker %s lost", e.name)
}
