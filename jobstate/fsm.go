package jobstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ddrun/ddrun/checkpoint"
)

// JobState is the replicated state of the group: the metadata of one job.
// Every member holds the same JobState once it has applied the same log.
type JobState struct {
	// JobStart is what the first Start recorded (zero before it).
	JobStart
	// Epoch is bumped by each new leader before it drives the job.
	Epoch uint64 `json:"epoch"`
	// Leader is the raft id of the coordinator that took Epoch.
	Leader string `json:"leader,omitempty"`
	// Checkpoint is the latest committed checkpoint manifest, nil before
	// the first.
	Checkpoint *checkpoint.Manifest `json:"checkpoint,omitempty"`
	// Done is set by Finish.
	Done bool `json:"done"`
	// Result is the final result, when Done.
	Result json.RawMessage `json:"result,omitempty"`
	// Failovers counts the epochs after the first that were taken while a
	// job was started and not done: leader changes that had to resume the
	// job.
	Failovers int `json:"failovers"`
}

// JobStart is what a start command carries and the JobState keeps: the
// job, its model and settings, and when it started.
type JobStart struct {
	// Job is the job id, empty before Start.
	Job string `json:"job,omitempty"`
	// ModelHash is the sha256 hex of the model file(s).
	ModelHash string `json:"model_hash,omitempty"`
	// Settings are the solver settings, opaque to this package.
	Settings json.RawMessage `json:"settings,omitempty"`
	// Started is when the job was first started (by the clock of the
	// member that started it; zero in logs written before it was kept):
	// the job's wall time counts from it, outages included.
	Started time.Time `json:"started,omitzero"`
}

// clone returns a copy of s that shares no mutable memory with it.
func (s JobState) clone() JobState {
	c := s
	c.Settings = cloneRaw(s.Settings)
	c.Result = cloneRaw(s.Result)
	if s.Checkpoint != nil {
		m := cloneManifest(*s.Checkpoint)
		c.Checkpoint = &m
	}
	return c
}

func cloneManifest(m checkpoint.Manifest) checkpoint.Manifest {
	c := m
	c.Meta = cloneRaw(m.Meta)
	c.Seal = bytes.Clone(m.Seal)
	if m.Blobs != nil {
		c.Blobs = append([]checkpoint.Blob(nil), m.Blobs...)
	}
	return c
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

// Command types, the "type" tag of an encoded command.
const (
	cmdStart      = "start"
	cmdTakeEpoch  = "take_epoch"
	cmdCheckpoint = "checkpoint"
	cmdFinish     = "finish"
)

// command is one Raft log entry, encoded as JSON. Type selects which of
// the other fields are meaningful.
type command struct {
	Type string `json:"type"`

	// start
	JobStart

	// take_epoch
	Epoch  uint64 `json:"epoch,omitempty"`
	Leader string `json:"leader,omitempty"`

	// checkpoint
	Manifest *checkpoint.Manifest `json:"manifest,omitempty"`

	// finish
	Result json.RawMessage `json:"result,omitempty"`
}

// ErrRejected is wrapped by every error the state machine returns for a
// command that is not valid in the current state (wrong epoch, older
// checkpoint, different job, ...). Such a command changes nothing.
var ErrRejected = errors.New("jobstate: command rejected")

func rejectf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRejected}, args...)...)
}

// apply validates c against s and returns the next state, or an error
// wrapping ErrRejected and s unchanged. It is deterministic: every member
// reaches the same answer for the same log.
func apply(s JobState, c command) (JobState, error) {
	switch c.Type {
	case cmdStart:
		switch {
		case c.Job == "":
			return s, rejectf("start: empty job id")
		case c.ModelHash == "":
			return s, rejectf("start %s: empty model hash", c.Job)
		case s.Job == "":
			s.JobStart = c.JobStart
			s.Settings = cloneRaw(c.Settings)
			return s, nil
		case s.Job == c.Job && s.ModelHash == c.ModelHash:
			return s, nil // idempotent; the first settings and start time stay
		default:
			return s, rejectf("start %s (model %s): group already runs job %s (model %s)", c.Job, c.ModelHash, s.Job, s.ModelHash)
		}
	case cmdTakeEpoch:
		switch {
		case c.Leader == "":
			return s, rejectf("take epoch %d: empty leader id", c.Epoch)
		case c.Epoch != s.Epoch+1:
			return s, rejectf("take epoch %d for %s: current epoch is %d, want %d", c.Epoch, c.Leader, s.Epoch, s.Epoch+1)
		}
		s.Epoch, s.Leader = c.Epoch, c.Leader
		if c.Epoch > 1 && s.Job != "" && !s.Done {
			s.Failovers++
		}
		return s, nil
	case cmdCheckpoint:
		m := c.Manifest
		switch {
		case m == nil:
			return s, rejectf("checkpoint: no manifest")
		case s.Job == "":
			return s, rejectf("checkpoint %s@%d: no job started", m.Job, m.Iteration)
		case s.Done:
			return s, rejectf("checkpoint %s@%d: job is finished", m.Job, m.Iteration)
		case m.Job != s.Job:
			return s, rejectf("checkpoint %s@%d: group runs job %s", m.Job, m.Iteration, s.Job)
		case m.Epoch != s.Epoch:
			return s, rejectf("checkpoint %s@%d: epoch %d, current epoch is %d", m.Job, m.Iteration, m.Epoch, s.Epoch)
		case s.Checkpoint != nil && m.Iteration < s.Checkpoint.Iteration:
			return s, rejectf("checkpoint %s@%d: older than the committed iteration %d", m.Job, m.Iteration, s.Checkpoint.Iteration)
		}
		if err := m.Validate(); err != nil {
			return s, rejectf("checkpoint: %v", err)
		}
		cp := cloneManifest(*m)
		s.Checkpoint = &cp
		return s, nil
	case cmdFinish:
		switch {
		case s.Job == "":
			return s, rejectf("finish: no job started")
		case s.Done && bytes.Equal(s.Result, c.Result):
			return s, nil // idempotent
		case s.Done:
			return s, rejectf("finish %s: already finished with another result", s.Job)
		}
		s.Done, s.Result = true, cloneRaw(c.Result)
		return s, nil
	default:
		return s, rejectf("unknown command type %q", c.Type)
	}
}

// fsm is the raft.FSM holding the JobState.
type fsm struct {
	mu    sync.Mutex
	state JobState
	// changed is closed and replaced after every applied command (the
	// broadcast WaitApplied waits on).
	changed chan struct{}
	// notify is the coalesced, non-blocking signal Group.Changed returns.
	notify chan struct{}
}

func newFSM() *fsm {
	return &fsm{changed: make(chan struct{}), notify: make(chan struct{}, 1)}
}

// snapshotVersion tags the snapshot encoding.
const snapshotVersion = 1

type snapshotData struct {
	Version int      `json:"version"`
	State   JobState `json:"state"`
}

// Apply implements raft.FSM. The response is nil or an error wrapping
// ErrRejected; a rejected command leaves the state as it was.
func (f *fsm) Apply(l *raft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return rejectf("log entry %d: decode: %v", l.Index, err)
	}
	f.mu.Lock()
	next, err := apply(f.state, c)
	if err == nil {
		f.state = next
	}
	f.signalLocked()
	f.mu.Unlock()
	return err
}

// signalLocked wakes the waiters; f.mu must be held.
func (f *fsm) signalLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// get returns a copy of the state and the channel closed on its next
// change.
func (f *fsm) get() (JobState, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.clone(), f.changed
}

// Snapshot implements raft.FSM. The state is small, so it is encoded here,
// under the lock, and Persist only writes the bytes.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	data, err := json.Marshal(snapshotData{Version: snapshotVersion, State: f.state})
	f.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("jobstate: encode snapshot: %w", err)
	}
	return fsmSnapshot(data), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	var d snapshotData
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return fmt.Errorf("jobstate: decode snapshot: %w", err)
	}
	if d.Version != snapshotVersion {
		return fmt.Errorf("jobstate: snapshot version %d, want %d", d.Version, snapshotVersion)
	}
	f.mu.Lock()
	f.state = d.State
	f.signalLocked()
	f.mu.Unlock()
	return nil
}

type fsmSnapshot []byte

// Persist implements raft.FSMSnapshot.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("jobstate: write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("jobstate: close snapshot: %w", err)
	}
	return nil
}

// Release implements raft.FSMSnapshot.
func (fsmSnapshot) Release() {}
