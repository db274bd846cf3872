package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/transport"
)

// Roles of a run's checkpoint blobs: the coordinator's state, the
// placement of the slaves, and one blob per part.
const (
	roleMaster    = "master"
	rolePlacement = "placement"
	// roleRefs, in a sharded run's checkpoint, replaces the placement
	// and the parts: the workers' references to the part states they
	// saved themselves (consensus.State.Refs).
	roleRefs = "refs"
)

func rolePart(w int) string { return fmt.Sprintf("part-%d", w) }

// masterBlob is the coordinator's side of a consensus.State.
type masterBlob struct {
	Iter       int              `msgpack:"iter"`
	Eta        float64          `msgpack:"eta"`
	PrevStep   float64          `msgpack:"ps"`
	NextAdapt  int              `msgpack:"na"`
	AdaptWait  int              `msgpack:"aw"`
	BestDual   float64          `msgpack:"bd"`
	BestPrimal float64          `msgpack:"bp"`
	HasBest    bool             `msgpack:"hb"`
	BestX      transport.Int32s `msgpack:"bx"`
	X          transport.Int32s `msgpack:"x"`
	Pending    bool             `msgpack:"pend"`
	BLambda    transport.Floats `msgpack:"bl"`
	BNu        transport.Floats `msgpack:"bnu"`
	BMu        transport.Floats `msgpack:"bmu"`
	Elapsed    int64            `msgpack:"el"`
	Parts      int              `msgpack:"parts"`
	Shards     int              `msgpack:"shards,omitempty"` // a sharded run's parts (roleRefs)
}

// CheckpointMeta is what a manifest says about its run besides the blobs:
// enough to refuse resuming another model or other settings, and the
// bounds for a quick look.
type CheckpointMeta struct {
	ModelHash  string          `json:"model_hash"`
	Settings   json.RawMessage `json:"settings,omitempty"`
	BestDual   float64         `json:"best_dual"`
	BestPrimal *float64        `json:"best_primal"` // null: none yet
	// Redone and Failovers count, over the epochs before this one, the
	// iterations run again after a resume and the failovers (workers
	// replaced, coordinators taken over).
	Redone    int `json:"redone"`
	Failovers int `json:"failovers"`
	// Started is when the job first started (zero in checkpoints taken
	// before it was kept): a resumed job's wall time counts from it.
	Started time.Time `json:"started,omitzero"`
}

// EncodeState turns a run's state and its placement into checkpoint parts.
func EncodeState(st *consensus.State, where []int32) ([]checkpoint.Part, error) {
	mb := masterBlob{Iter: st.Iter, Eta: st.Eta, PrevStep: st.PrevStep, NextAdapt: st.NextAdapt, AdaptWait: st.AdaptWait,
		BestDual: st.BestDual, BestPrimal: st.BestPrimal, HasBest: st.BestX != nil, BestX: int32s(st.BestX), X: int32s(st.X),
		Pending: st.Pending, BLambda: st.BLambda, BNu: st.BNu, BMu: st.BMu, Elapsed: int64(st.Elapsed), Parts: len(st.Parts)}
	if st.Refs != nil {
		mb.Shards = len(st.Refs)
	}
	data, err := msgpack.Marshal(&mb)
	if err != nil {
		return nil, fmt.Errorf("encoding the coordinator's state: %w", err)
	}
	parts := []checkpoint.Part{{Role: roleMaster, Data: data}}
	if st.Refs != nil {
		if data, err = msgpack.Marshal(st.Refs); err != nil {
			return nil, fmt.Errorf("encoding the part states' references: %w", err)
		}
		return append(parts, checkpoint.Part{Role: roleRefs, Data: data}), nil
	}
	if data, err = msgpack.Marshal(transport.Int32s(where)); err != nil {
		return nil, fmt.Errorf("encoding the placement: %w", err)
	}
	parts = append(parts, checkpoint.Part{Role: rolePlacement, Data: data})
	for w := range st.Parts {
		data, err := msgpack.Marshal(wireState(&st.Parts[w]))
		if err != nil {
			return nil, fmt.Errorf("encoding part %d: %w", w, err)
		}
		parts = append(parts, checkpoint.Part{Role: rolePart(w), Data: data})
	}
	return parts, nil
}

// DecodeState rebuilds a run's state and placement from a checkpoint's
// blobs (by role, as checkpoint.Read returns them).
func DecodeState(blobs map[string][]byte) (*consensus.State, []int32, error) {
	var mb masterBlob
	if err := msgpack.Unmarshal(blobs[roleMaster], &mb); err != nil {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %w", roleMaster, err)
	}
	if mb.Shards > 0 {
		return decodeShardState(&mb, blobs)
	}
	if mb.Parts < 1 || mb.Parts > len(blobs) {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %d parts, %d blobs", roleMaster, mb.Parts, len(blobs))
	}
	var where transport.Int32s
	if err := msgpack.Unmarshal(blobs[rolePlacement], &where); err != nil {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %w", rolePlacement, err)
	}
	for s, w := range where {
		if w < 0 || int(w) >= mb.Parts {
			return nil, nil, fmt.Errorf("checkpoint blob %q: slave %d on part %d of %d", rolePlacement, s, w, mb.Parts)
		}
	}
	st := mb.state()
	for w := 0; w < mb.Parts; w++ {
		data, ok := blobs[rolePart(w)]
		if !ok {
			return nil, nil, fmt.Errorf("checkpoint: no blob %q", rolePart(w))
		}
		var p partStateWire
		if err := msgpack.Unmarshal(data, &p); err != nil {
			return nil, nil, fmt.Errorf("checkpoint blob %q: %w", rolePart(w), err)
		}
		st.Parts = append(st.Parts, *p.state())
	}
	return st, []int32(where), nil
}

// state returns the coordinator's side of the state the blob holds.
func (mb *masterBlob) state() *consensus.State {
	st := &consensus.State{Iter: mb.Iter, Eta: mb.Eta, PrevStep: mb.PrevStep, NextAdapt: mb.NextAdapt, AdaptWait: mb.AdaptWait,
		BestDual: mb.BestDual, BestPrimal: mb.BestPrimal, X: ints(mb.X), Pending: mb.Pending,
		BLambda: mb.BLambda, BNu: mb.BNu, BMu: mb.BMu, Elapsed: time.Duration(mb.Elapsed)}
	if mb.HasBest {
		st.BestX = ints(mb.BestX)
	}
	return st
}

// decodeShardState rebuilds a sharded run's state: the master's blob and
// the references of its mb.Shards parts' states (no placement).
func decodeShardState(mb *masterBlob, blobs map[string][]byte) (*consensus.State, []int32, error) {
	data := blobs[roleRefs]
	if mb.Shards > len(data) {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %d bytes for %d parts", roleRefs, len(data), mb.Shards)
	}
	var refs [][]byte
	if err := msgpack.Unmarshal(data, &refs); err != nil {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %w", roleRefs, err)
	}
	if len(refs) != mb.Shards {
		return nil, nil, fmt.Errorf("checkpoint blob %q: %d references for %d parts", roleRefs, len(refs), mb.Shards)
	}
	for w, r := range refs {
		if len(r) == 0 || len(r) > maxStateRef {
			return nil, nil, fmt.Errorf("checkpoint blob %q: part %d's reference of %d bytes", roleRefs, w, len(r))
		}
	}
	st := mb.state()
	st.Refs = refs
	return st, nil, nil
}

// CheckpointerOptions configures a Checkpointer.
type CheckpointerOptions struct {
	Store checkpoint.Store
	// Record makes a written checkpoint current: a manifest file next to
	// the blobs, or a Raft entry. An error from it ends the run (for
	// example a Raft leader that lost its leadership).
	Record func(ctx context.Context, m checkpoint.Manifest) error
	// Prune, when not nil, removes what is no longer needed after a
	// checkpoint was recorded; when nil the Checkpointer deletes the
	// objects of the checkpoints it wrote that the last Keep no longer
	// name.
	Prune func(ctx context.Context) error
	Keep  int // default 2
	// Base and Epoch: the job and epoch of the checkpoints (their
	// manifests' Job and Epoch).
	Base      string
	Epoch     uint64
	ModelHash string
	Settings  json.RawMessage
	// Redone, Failovers and Started go into every manifest's
	// CheckpointMeta.
	Redone, Failovers int
	Started           time.Time
	Logger            *slog.Logger
	// Done, when not nil, is told of every checkpoint when its write
	// ends: its encoding, writing and recording took d; err when it
	// failed.
	Done func(d time.Duration, err error)
}

// CheckpointStats measures a Checkpointer's work.
type CheckpointStats struct {
	Written int           // checkpoints recorded
	Failed  int           // checkpoints that could not be written
	Bytes   int64         // bytes of the last checkpoint's blobs
	Encode  time.Duration // total time encoding states (in the run's loop)
	Write   time.Duration // total time writing and recording (in the background)
	Last    checkpoint.Manifest
}

// Checkpointer writes a run's states as checkpoints in the background: the
// run's loop only encodes the state; the blobs are written and the
// manifest recorded while the next iterations run. One write is in flight
// at a time: a state taken while the previous one is still being written
// waits for it.
type Checkpointer struct {
	o    CheckpointerOptions
	log  *slog.Logger
	done chan struct{} // closed when the write in flight ends; nil when none

	mu    sync.Mutex // guards the fields below
	fatal error
	stats CheckpointStats
	kept  []checkpoint.Manifest
}

// NewCheckpointer returns a Checkpointer; its Save is a
// CheckpointOptions.Save.
func NewCheckpointer(o CheckpointerOptions) *Checkpointer {
	if o.Keep < 1 {
		o.Keep = 2
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Checkpointer{o: o, log: log}
}

// Save encodes st and starts writing it; it returns the error that ended
// an earlier write's recording, if any.
func (c *Checkpointer) Save(ctx context.Context, st *consensus.State, where []int32) error {
	// Not cancelled with ctx: an interrupted run still ends its iteration,
	// and the write in flight is bounded by the store's deadlines.
	if err := c.Wait(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	t0 := time.Now()
	parts, err := EncodeState(st, where)
	if err != nil {
		return err
	}
	meta := CheckpointMeta{ModelHash: c.o.ModelHash, Settings: c.o.Settings, BestDual: st.BestDual, Redone: c.o.Redone, Failovers: c.o.Failovers, Started: c.o.Started}
	if !math.IsInf(st.BestPrimal, -1) {
		bp := st.BestPrimal
		meta.BestPrimal = &bp
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	encode := time.Since(t0)
	c.mu.Lock()
	c.stats.Encode += encode
	c.mu.Unlock()
	m := checkpoint.Manifest{Job: c.o.Base, Epoch: c.o.Epoch, Iteration: st.Iter, Meta: mj}
	done := make(chan struct{})
	c.done = done
	go func() {
		defer close(done)
		c.write(context.WithoutCancel(ctx), m, parts, encode)
	}()
	return nil
}

func (c *Checkpointer) write(ctx context.Context, m checkpoint.Manifest, parts []checkpoint.Part, encode time.Duration) {
	t0 := time.Now()
	iter := m.Iteration
	done := func(err error) {
		if c.o.Done != nil {
			c.o.Done(encode+time.Since(t0), err)
		}
	}
	m, err := checkpoint.Write(ctx, c.o.Store, m, parts)
	if err != nil {
		c.log.Warn("checkpoint not written", "iteration", iter, "err", err)
		c.mu.Lock()
		c.stats.Failed++
		c.mu.Unlock()
		done(err)
		return
	}
	if err := c.o.Record(ctx, m); err != nil {
		c.mu.Lock()
		c.fatal = fmt.Errorf("recording the checkpoint of iteration %d: %w", m.Iteration, err)
		c.mu.Unlock()
		done(err)
		return
	}
	var size int64
	for _, b := range m.Blobs {
		size += b.Size
	}
	elapsed := time.Since(t0)
	c.mu.Lock()
	c.stats.Written++
	c.stats.Bytes = size
	c.stats.Write += elapsed
	c.stats.Last = m
	c.kept = append(c.kept, m)
	var drop []checkpoint.Manifest
	if len(c.kept) > c.o.Keep {
		drop = append(drop, c.kept[:len(c.kept)-c.o.Keep]...)
		c.kept = append([]checkpoint.Manifest(nil), c.kept[len(c.kept)-c.o.Keep:]...)
	}
	kept := c.kept
	c.mu.Unlock()
	c.log.Info("checkpoint", "iteration", m.Iteration, "bytes", size, "seconds", elapsed.Seconds())
	done(nil)
	if c.o.Prune != nil {
		if err := c.o.Prune(ctx); err != nil {
			c.log.Warn("pruning checkpoints", "err", err)
		}
		return
	}
	inUse := map[string]bool{}
	for _, k := range kept {
		for _, b := range k.Blobs {
			inUse[b.Object] = true
		}
	}
	for _, d := range drop {
		for _, b := range d.Blobs {
			if !inUse[b.Object] {
				if err := c.o.Store.Delete(ctx, b.Object); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					c.log.Warn("pruning checkpoints", "object", b.Object, "err", err)
				}
			}
		}
	}
}

// Wait waits for the write in flight, if any, and returns the error that
// ended a recording, if any.
func (c *Checkpointer) Wait(ctx context.Context) error {
	if c.done != nil {
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

// Stats returns what the Checkpointer did so far.
func (c *Checkpointer) Stats() CheckpointStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
