package dsearch

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// A certificate (optimal, or infeasible: nothing open and no incumbent)
// rests on the answers' claims that their open nodes cover their subtrees,
// which the coordinator cannot check. Without a job key a forger can answer
// a task before its worker does ("searched, no open nodes"), and one such
// answer to the root ended a search infeasible. The honest worker still
// answers that task, and its answer differs. So the coordinator keeps a
// digest of every answer heard for the recent tasks, and of the one it took,
// and before it certifies anything on an unsealed transport it waits until
// each worker says (its busy heartbeat's Done) that it has answered the last
// task it was given, or a slice and LostAfter have passed; a taken answer
// that another answer of the same worker to the same task contradicts fails
// the search (*ConflictError). A forger that also forges the heartbeats
// and is faster than the worker can still be believed: only a job key
// (transport.Sealed) stops it.

// keepAnswers is how many task ids below the newest the answers' digests
// are kept for; maxAnswers bounds the distinct answers kept per task.
const (
	keepAnswers = 4096
	maxAnswers  = 4
)

type answerKey struct {
	worker string
	id     uint64
}

type answerDigest [sha256.Size]byte

// answers is what the coordinator heard and took (safe for concurrent use:
// the transport's goroutines hear, the loop takes).
type answers struct {
	mu       sync.Mutex
	issued   uint64 // the newest task id given out
	heard    map[answerKey][]answerDigest
	took     map[answerKey]answerDigest
	conflict *ConflictError
}

// ConflictError ends a search whose result rests on an answer that another
// answer of the same worker to the same task contradicts.
type ConflictError struct {
	Worker string
	Task   uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("worker %s sent two different answers to task %d: a forged message (use a job key); nothing is certified", e.Worker, e.Task)
}

func (a *answers) issue(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.issued = max(a.issued, id)
	if len(a.heard) > 2*keepAnswers || len(a.took) > 2*keepAnswers {
		for k := range a.heard {
			if k.id+keepAnswers < a.issued {
				a.check(k)
				delete(a.heard, k)
				delete(a.took, k)
			}
		}
	}
}

// hear records an answer of worker to task id.
func (a *answers) hear(worker string, id uint64, d answerDigest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id == 0 || id > a.issued || id+keepAnswers < a.issued {
		return // not a task given out, or long answered
	}
	if a.heard == nil {
		a.heard, a.took = map[answerKey][]answerDigest{}, map[answerKey]answerDigest{}
	}
	k := answerKey{worker, id}
	ds := a.heard[k]
	for _, x := range ds {
		if x == d {
			return
		}
	}
	if len(ds) < maxAnswers {
		a.heard[k] = append(ds, d)
	} else if _, ok := a.took[k]; ok && a.conflict == nil {
		a.conflict = &ConflictError{Worker: worker, Task: id}
	}
	a.check(k)
}

// take records that the search took answer d of worker to task id.
func (a *answers) take(worker string, id uint64, d answerDigest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.took == nil {
		a.heard, a.took = map[answerKey][]answerDigest{}, map[answerKey]answerDigest{}
	}
	k := answerKey{worker, id}
	a.took[k] = d
	a.check(k)
}

// check notes a conflict at k (guarded by a.mu).
func (a *answers) check(k answerKey) {
	d, ok := a.took[k]
	if !ok || a.conflict != nil {
		return
	}
	for _, x := range a.heard[k] {
		if x != d {
			a.conflict = &ConflictError{Worker: k.worker, Task: k.id}
			return
		}
	}
}

func (a *answers) conflicted() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conflict != nil {
		return a.conflict
	}
	return nil
}

// confirm runs before a search that is over is certified: on an unsealed
// transport it waits until every worker still in the search has said it
// answered the last task it took (or a slice and LostAfter passed), and it
// fails on a conflict among the answers (see the top of this file).
func (c *coord) confirm() error {
	if !c.sealed {
		deadline := time.NewTimer(c.opts.SliceTime + c.opts.LostAfter)
		defer deadline.Stop()
		for !c.answered() {
			select {
			case <-c.ctx.Done():
				return c.ans.conflicted()
			case <-deadline.C:
				c.log.Warn("search: not every worker confirmed its last answer before the result", "insecure", true)
				return c.ans.conflicted()
			case e := <-c.events:
				if w := c.workers[e.worker]; w != nil && e.kind == kindBusy && e.cid == c.cid {
					w.done = max(w.done, e.busy.Done)
				}
			}
		}
	}
	return c.ans.conflicted()
}

// answered reports whether every worker has said it answered the last task
// whose answer the search took from it.
func (c *coord) answered() bool {
	for _, w := range c.workers {
		if w.done < w.took {
			return false
		}
	}
	return true
}
