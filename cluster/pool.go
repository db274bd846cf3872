package cluster

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// Shared worker pools. Several coordinators may draw workers from one pool
// (the workers announcing themselves on the control subject). A
// coordinator claims each worker before it assigns it a part; the worker
// grants a claim only when it is free (idle and unclaimed, or its claim
// lapsed) or when the claim comes from a later epoch of the job it holds
// (a new Raft leader taking its predecessor's workers over), so two jobs
// never share a worker. A claim lasts while the coordinator beats (every
// beatEvery on the job's beat subject, and every step counts) and lapses
// after ReleaseAfter of silence, so a job whose coordinator dies gives its
// workers back within seconds. A coordinator that holds some workers but
// cannot get all it needs while others are busy gives its claims back and
// tries again after a random pause, so two jobs that each hold part of
// what they need cannot wait for each other forever.

// claimer claims workers for one epoch of a job and beats for it.
type claimer struct {
	tr           transport.Transport
	job, base    string
	epoch        uint64
	releaseAfter time.Duration
	seq          *transport.Sequence
	log          *slog.Logger

	mu      sync.Mutex
	answers map[string]chan claimedBody // pending claims, by worker
	// answeredSeq is the highest Seq of each worker's answers taken: its
	// heartbeats for the job must come after it (a replayed older one
	// does not keep a dead worker alive).
	answeredSeq map[string]uint64
	sub         transport.Subscription
	stop        context.CancelFunc
	done        chan struct{}
}

// newClaimer starts beating for job and listens for the answers to its
// claims. close stops both.
func newClaimer(ctx context.Context, tr transport.Transport, job, base string, epoch uint64, releaseAfter time.Duration, seq *transport.Sequence, log *slog.Logger) (*claimer, error) {
	cl := &claimer{tr: tr, job: job, base: base, epoch: epoch, releaseAfter: releaseAfter, seq: seq, log: log,
		answers: map[string]chan claimedBody{}, answeredSeq: map[string]uint64{}, done: make(chan struct{})}
	sub, err := tr.Subscribe(reportsWildcard(job), cl.onAnswer)
	if err != nil {
		return nil, err
	}
	cl.sub = sub
	ctx, cl.stop = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(cl.done)
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		for {
			_ = publish(ctx, tr, job, seq, beatSubject(job), transport.Header{Kind: kindBeat}, beatBody{})
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return cl, nil
}

func (cl *claimer) close() {
	cl.stop()
	<-cl.done
	_ = cl.sub.Unsubscribe()
}

// onAnswer hands a worker's answer to a claim to the claim waiting for it.
func (cl *claimer) onAnswer(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil || h.Kind != kindClaimed || h.Job != cl.job {
		return
	}
	var a claimedBody
	if transport.DecodeBody(raw, &a) != nil {
		return
	}
	cl.mu.Lock()
	ch := cl.answers[h.From]
	if h.Seq <= cl.answeredSeq[h.From] {
		// Older than an answer already taken: a replay (a worker taken
		// back after a loss is claimed again by the same job, and its
		// first answer, perhaps a grant, was on the wire).
		ch = nil
	}
	if ch != nil {
		cl.answeredSeq[h.From] = h.Seq
	}
	cl.mu.Unlock()
	if ch != nil {
		select {
		case ch <- a:
		default:
		}
	}
}

// answeredAt is the highest Seq of worker name's claim answers taken.
func (cl *claimer) answeredAt(name string) uint64 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.answeredSeq[name]
}

// claim asks worker name to hold itself for the job and returns its
// answer; no answer within claimWait is a refusal.
func (cl *claimer) claim(ctx context.Context, name string) (claimedBody, error) {
	ch := make(chan claimedBody, 1)
	cl.mu.Lock()
	cl.answers[name] = ch
	cl.mu.Unlock()
	defer func() {
		cl.mu.Lock()
		delete(cl.answers, name)
		cl.mu.Unlock()
	}()
	body := claimBody{Base: cl.base, Epoch: cl.epoch, ReleaseAfterMs: cl.releaseAfter.Milliseconds()}
	if err := publish(ctx, cl.tr, cl.job, cl.seq, assignSubject(cl.job, name), transport.Header{Kind: kindClaim}, body); err != nil {
		return claimedBody{}, fmt.Errorf("claiming worker %s: %w", name, err)
	}
	timer := time.NewTimer(claimWait)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-timer.C:
		return claimedBody{}, nil
	case <-ctx.Done():
		return claimedBody{}, ctx.Err()
	}
}

// release gives workers back to the pool.
func (cl *claimer) release(ctx context.Context, names ...string) {
	for _, name := range names {
		_ = publish(ctx, cl.tr, cl.job, cl.seq, assignSubject(cl.job, name), transport.Header{Kind: kindRelease}, releaseBody{})
	}
}

// publish sends body on subject from the coordinator of job, with the next
// sequence number of seq.
func publish(ctx context.Context, tr transport.Transport, job string, seq *transport.Sequence, subject string, h transport.Header, body any) error {
	h.Job, h.From, h.Seq = job, "coordinator", seq.Next()
	data, err := transport.Encode(h, body)
	if err != nil {
		return err
	}
	return tr.Publish(ctx, subject, data)
}

// Timings of claiming.
const (
	// claimPatience: a coordinator holding some but not all the workers it
	// needs, with no new grant for this long while other workers are busy,
	// gives its claims back (and tries again after a random pause).
	claimPatience = 2 * time.Second
	// queueLogEvery: how often a queued job says what it waits for.
	queueLogEvery = 5 * time.Second
)

// claimOrder is worker's place in the order in which job asks for workers.
func claimOrder(job, worker string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write([]byte(worker))
	return h.Sum64()
}

// poolWorker is a worker as its announcements describe it.
type poolWorker struct {
	hello helloBody
	at    time.Time
}

// free reports whether the worker may be claimed by job (an epoch of a
// base whose earlier epochs joinable accepts).
func (p poolWorker) free(job string, joinable func(string) bool) bool {
	h := p.hello
	return (h.Job == "" || h.Job == job || joinable(h.Job)) && (h.Claimed == "" || h.Claimed == job || joinable(h.Claimed))
}

// claimWorkers claims n workers of the pool (but those in avoid, until
// they speak again: lostWorker) for the
// claimer's job and returns their names, sorted, and the highest
// iteration that workers serving an earlier epoch of the job had reached. While the pool has n
// workers but too few are free, the job waits (queued), saying so every
// queueLogEvery; it fails after wait only when fewer than n workers
// announce themselves at all.
func claimWorkers(ctx context.Context, cl *claimer, n int, wait time.Duration, joinable func(string) bool, avoid map[string]lostWorker) ([]string, int, error) {
	var mu sync.Mutex
	pool := map[string]poolWorker{}
	var seen transport.Newest
	// silent: the workers that did not answer their last claim. They do
	// not count as present until they answer one: hellos of a dead worker
	// replayed (each newer than the last, from a long recording) do not
	// keep the job waiting for it past wait.
	silent := map[string]bool{}
	prior := 0
	sub, err := cl.tr.Subscribe(controlSubject, func(_ string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		h, seq, ok := decodeHello(data, &seen)
		if l, lost := avoid[h.Name]; !ok || lost && !l.back(seq) {
			return
		}
		pool[h.Name] = poolWorker{hello: h, at: time.Now()}
		if h.Job != "" && joinable(h.Job) {
			prior = max(prior, h.Iter)
		}
	})
	if err != nil {
		return nil, 0, err
	}
	defer sub.Unsubscribe()
	granted := map[string]bool{}
	refused := map[string]time.Time{} // until when not to ask again
	start, lastGrant := time.Now(), time.Now()
	var lastLog time.Time
	holding := map[string]time.Time{} // the jobs seen holding busy workers, since when
	giveBack := func() {
		var names []string
		for name := range granted {
			names = append(names, name)
		}
		cl.release(ctx, names...)
		clear(granted)
	}
	for {
		// The workers heard from lately, and those worth a claim.
		mu.Lock()
		var present, candidates []string
		for name, p := range pool {
			if time.Since(p.at) > 3*helloEvery {
				continue
			}
			if !silent[name] {
				present = append(present, name)
			}
			if !granted[name] && time.Now().After(refused[name]) && p.free(cl.job, joinable) {
				candidates = append(candidates, name)
			}
		}
		mu.Unlock()
		// Each job asks in its own order, so that jobs claiming at the
		// same time mostly ask different workers.
		slices.SortFunc(candidates, func(a, b string) int { return cmp.Compare(claimOrder(cl.job, a), claimOrder(cl.job, b)) })
		if need := n - len(granted); len(candidates) > need {
			candidates = candidates[:need]
		}
		answers := make([]claimedBody, len(candidates))
		errs := make([]error, len(candidates))
		answered := make([]bool, len(candidates))
		var wg sync.WaitGroup
		for i, name := range candidates {
			wg.Go(func() {
				before := cl.answeredAt(name)
				answers[i], errs[i] = cl.claim(ctx, name)
				answered[i] = cl.answeredAt(name) != before
			})
		}
		wg.Wait()
		mu.Lock()
		for i, name := range candidates {
			silent[name] = errs[i] == nil && !answered[i]
		}
		mu.Unlock()
		for i, name := range candidates {
			switch {
			case errs[i] != nil:
				giveBack()
				return nil, 0, errs[i]
			case answers[i].Granted:
				granted[name] = true
				lastGrant = time.Now()
			default:
				refused[name] = time.Now().Add(claimWait)
			}
		}
		if len(granted) >= n {
			names := make([]string, 0, n)
			for name := range granted {
				names = append(names, name)
			}
			slices.Sort(names)
			cl.release(ctx, names[n:]...)
			mu.Lock()
			defer mu.Unlock()
			return names[:n], prior, nil
		}
		// Busy: present, not ours, and not free for us (or refusing).
		busy := 0
		var holders []string
		mu.Lock()
		for _, name := range present {
			if !granted[name] && (!pool[name].free(cl.job, joinable) || time.Now().Before(refused[name])) {
				busy++
				if h := pool[name].hello; h.Job != "" || h.Claimed != "" {
					holders = append(holders, cmp.Or(h.Job, h.Claimed))
				}
			}
		}
		mu.Unlock()
		held := heldBy(holding, holders)
		switch {
		case len(present) < n && time.Since(start) > wait:
			giveBack()
			slices.Sort(present)
			return nil, 0, fmt.Errorf("waited %v for %d workers, %d joined [%s]; start more with: worker --nats URL", wait, n, len(present), strings.Join(present, " "))
		case len(granted) > 0 && busy > 0 && time.Since(lastGrant) > claimPatience:
			// Hold and wait could deadlock with another job doing the
			// same: give everything back and try again later.
			giveBack()
			pause := time.Duration(200+rand.IntN(800)) * time.Millisecond
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-time.After(pause):
			}
			lastGrant = time.Now()
		}
		if time.Since(lastLog) >= queueLogEvery && len(present) >= n && busy > 0 {
			lastLog = time.Now()
			cl.log.Info("waiting for workers: the pool is busy", "job", cl.job, "claimed", len(granted), "wanted", n,
				"pool", len(present), "busy", busy, "held_by", held)
		}
		select {
		case <-ctx.Done():
			giveBack()
			return nil, 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// heldBy says which jobs hold the busy workers and for how long they have
// been seen holding them ("job-a 12s, job-b 3s"), updating since.
func heldBy(since map[string]time.Time, holders []string) string {
	slices.Sort(holders)
	holders = slices.Compact(holders)
	now := time.Now()
	for job := range since {
		if !slices.Contains(holders, job) {
			delete(since, job)
		}
	}
	parts := make([]string, len(holders))
	for i, job := range holders {
		if _, ok := since[job]; !ok {
			since[job] = now
		}
		parts[i] = fmt.Sprintf("%s %v", job, now.Sub(since[job]).Round(time.Second))
	}
	return strings.Join(parts, ", ")
}
