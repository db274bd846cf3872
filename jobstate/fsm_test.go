package jobstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ddrun/ddrun/checkpoint"
)

func object(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// manifest returns a valid manifest of job at epoch and iteration.
func manifest(job string, epoch uint64, iter int) checkpoint.Manifest {
	return checkpoint.Manifest{
		Job:       job,
		Epoch:     epoch,
		Iteration: iter,
		Created:   time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Meta:      json.RawMessage(`{"dual":1.5}`),
		Blobs: []checkpoint.Blob{
			{Role: "master", Object: object("master"), Size: 10},
			{Role: "part-0", Object: object("part-0"), Size: 20},
		},
	}
}

func mp(m checkpoint.Manifest) *checkpoint.Manifest { return &m }

func TestApply(t *testing.T) {
	hash := object("model")
	t0, t1 := time.Unix(1000, 0).UTC(), time.Unix(2000, 0).UTC()
	started := JobState{JobStart: JobStart{Job: "j", ModelHash: hash, Settings: json.RawMessage(`{"x":1}`), Started: t0}}
	epoch1 := started
	epoch1.Epoch, epoch1.Leader = 1, "a"
	withCP := epoch1
	withCP.Checkpoint = mp(manifest("j", 1, 5))
	done := withCP
	done.Done, done.Result = true, json.RawMessage(`{"obj":3}`)
	bad := manifest("j", 1, 6)
	bad.Blobs[1].Object = "nothex"

	tests := []struct {
		name   string
		state  JobState
		cmd    command
		want   JobState // ignored when reject is set
		reject string   // substring of the rejection
	}{
		{name: "start", cmd: command{Type: cmdStart, JobStart: JobStart{Job: "j", ModelHash: hash, Settings: json.RawMessage(`{"x":1}`), Started: t0}}, want: started},
		{name: "start again is idempotent", state: started,
			cmd: command{Type: cmdStart, JobStart: JobStart{Job: "j", ModelHash: hash, Settings: json.RawMessage(`{"x":2}`), Started: t1}}, want: started},
		{name: "start other job", state: started, cmd: command{Type: cmdStart, JobStart: JobStart{Job: "k", ModelHash: hash}}, reject: "already runs job j"},
		{name: "start other model", state: started, cmd: command{Type: cmdStart, JobStart: JobStart{Job: "j", ModelHash: object("other")}}, reject: "already runs job j"},
		{name: "start empty job", cmd: command{Type: cmdStart, JobStart: JobStart{ModelHash: hash}}, reject: "empty job id"},
		{name: "start empty hash", cmd: command{Type: cmdStart, JobStart: JobStart{Job: "j"}}, reject: "empty model hash"},
		{name: "first epoch", state: started, cmd: command{Type: cmdTakeEpoch, Epoch: 1, Leader: "a"}, want: epoch1},
		{name: "epoch before start", cmd: command{Type: cmdTakeEpoch, Epoch: 1, Leader: "a"}, want: JobState{Epoch: 1, Leader: "a"}},
		{name: "second epoch is a failover", state: withCP, cmd: command{Type: cmdTakeEpoch, Epoch: 2, Leader: "b"},
			want: func() JobState { s := withCP; s.Epoch, s.Leader, s.Failovers = 2, "b", 1; return s }()},
		{name: "epoch after done is no failover", state: done, cmd: command{Type: cmdTakeEpoch, Epoch: 2, Leader: "b"},
			want: func() JobState { s := done; s.Epoch, s.Leader = 2, "b"; return s }()},
		{name: "epoch skipped", state: epoch1, cmd: command{Type: cmdTakeEpoch, Epoch: 3, Leader: "b"}, reject: "current epoch is 1, want 2"},
		{name: "epoch repeated", state: epoch1, cmd: command{Type: cmdTakeEpoch, Epoch: 1, Leader: "b"}, reject: "current epoch is 1"},
		{name: "epoch without leader", state: epoch1, cmd: command{Type: cmdTakeEpoch, Epoch: 2}, reject: "empty leader"},
		{name: "checkpoint", state: epoch1, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 5))}, want: withCP},
		{name: "checkpoint same iteration", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 5))}, want: withCP},
		{name: "checkpoint newer", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 9))},
			want: func() JobState { s := withCP; s.Checkpoint = mp(manifest("j", 1, 9)); return s }()},
		{name: "checkpoint older", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 4))}, reject: "older than the committed iteration 5"},
		{name: "checkpoint stale epoch", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 0, 6))}, reject: "epoch 0, current epoch is 1"},
		{name: "checkpoint future epoch", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 2, 6))}, reject: "epoch 2, current epoch is 1"},
		{name: "checkpoint other job", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("k", 1, 6))}, reject: "group runs job j"},
		{name: "checkpoint before start", cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 0, 1))}, reject: "no job started"},
		{name: "checkpoint invalid manifest", state: withCP, cmd: command{Type: cmdCheckpoint, Manifest: &bad}, reject: "not a sha256 hex digest"},
		{name: "checkpoint without manifest", state: withCP, cmd: command{Type: cmdCheckpoint}, reject: "no manifest"},
		{name: "checkpoint after finish", state: done, cmd: command{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 6))}, reject: "finished"},
		{name: "finish", state: withCP, cmd: command{Type: cmdFinish, Result: json.RawMessage(`{"obj":3}`)}, want: done},
		{name: "finish again", state: done, cmd: command{Type: cmdFinish, Result: json.RawMessage(`{"obj":3}`)}, want: done},
		{name: "finish other result", state: done, cmd: command{Type: cmdFinish, Result: json.RawMessage(`{"obj":4}`)}, reject: "already finished"},
		{name: "finish before start", cmd: command{Type: cmdFinish}, reject: "no job started"},
		{name: "unknown", state: withCP, cmd: command{Type: "explode"}, reject: `unknown command type "explode"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.state.clone()
			got, err := apply(tt.state, tt.cmd)
			if tt.reject != "" {
				if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), tt.reject) {
					t.Fatalf("apply: error %v, want ErrRejected containing %q", err, tt.reject)
				}
				if !reflect.DeepEqual(got, before) {
					t.Fatalf("rejected command changed the state:\n got %+v\nwant %+v", got, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("state:\n got %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.state, before) {
				t.Fatalf("apply modified its input:\n got %+v\nwant %+v", tt.state, before)
			}
		})
	}
}

func TestFSMApplyBadEntry(t *testing.T) {
	f := newFSM()
	resp := f.Apply(&raft.Log{Index: 7, Data: []byte("{not json")})
	if err, ok := resp.(error); !ok || !errors.Is(err, ErrRejected) {
		t.Fatalf("Apply(garbage) = %v, want ErrRejected", resp)
	}
	if s, _ := f.get(); !reflect.DeepEqual(s, JobState{}) {
		t.Fatalf("garbage changed the state: %+v", s)
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	src := newFSM()
	for _, c := range []command{
		{Type: cmdStart, JobStart: JobStart{Job: "j", ModelHash: object("m"), Settings: json.RawMessage(`{"a":[1,2]}`)}},
		{Type: cmdTakeEpoch, Epoch: 1, Leader: "a"},
		{Type: cmdCheckpoint, Manifest: mp(manifest("j", 1, 3))},
		{Type: cmdTakeEpoch, Epoch: 2, Leader: "b"},
		{Type: cmdFinish, Result: json.RawMessage(`"ok"`)},
	} {
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if resp := src.Apply(&raft.Log{Data: data}); resp != nil {
			t.Fatalf("apply %s: %v", c.Type, resp)
		}
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, 5, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	_, rc, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	dst := newFSM()
	if err := dst.Restore(rc); err != nil {
		t.Fatal(err)
	}
	want, _ := src.get()
	got, _ := dst.get()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored:\n got %+v\nwant %+v", got, want)
	}
	if want.Failovers != 1 || !want.Done || want.Checkpoint.Iteration != 3 {
		t.Fatalf("unexpected source state %+v", want)
	}
	select {
	case <-dst.notify:
	default:
		t.Fatal("Restore did not signal Changed")
	}

	if err := newFSM().Restore(io.NopCloser(strings.NewReader(`{"version":99}`))); err == nil {
		t.Fatal("Restore accepted an unknown version")
	}
	if err := newFSM().Restore(io.NopCloser(strings.NewReader(`garbage`))); err == nil {
		t.Fatal("Restore accepted garbage")
	}
}

func TestStateIsACopy(t *testing.T) {
	f := newFSM()
	f.state = JobState{JobStart: JobStart{Job: "j", Settings: json.RawMessage(`{"a":1}`)}, Checkpoint: mp(manifest("j", 1, 1))}
	s, _ := f.get()
	s.Settings[2] = 'X'
	s.Checkpoint.Blobs[0].Role = "changed"
	s.Checkpoint.Meta[0] = 'X'
	s.Checkpoint.Iteration = 99
	if g, _ := f.get(); string(g.Settings) != `{"a":1}` || g.Checkpoint.Blobs[0].Role != "master" ||
		g.Checkpoint.Meta[0] != '{' || g.Checkpoint.Iteration != 1 {
		t.Fatalf("State shares memory with the FSM: %+v", g)
	}
}

func TestHCLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := newHCLogger(l)
	h.Named("wal").Warn("disk slow", "ms", 12)
	h.Info("entering leader state")
	h.Debug("hidden debug")
	h.Trace("hidden trace")
	out := buf.String()
	for _, want := range []string{"level=WARN", `msg="disk slow"`, "component=raft.wal", "ms=12", "level=INFO", `msg="entering leader state"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("log output has records below the handler's level:\n%s", out)
	}
}
