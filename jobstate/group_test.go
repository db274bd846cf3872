package jobstate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// cluster is a test group of n members. By default they talk over raft's
// in-memory transport and keep their log and snapshots in memory (kept
// across a reopen, as a disk would), so the tests open no port; a disk
// cluster uses the real TCP transport on loopback ports and the stores in
// a directory per member, as coordinator run does.
type cluster struct {
	t      *testing.T
	disk   bool
	peers  map[string]string
	dirs   map[string]string
	groups map[string]*Group

	tls   map[string]*tls.Config          // a disk member's mutual TLS (nil: plain TCP)
	trans map[string]*raft.InmemTransport // the latest of each member
	logs  map[string]*raft.InmemStore
	snaps map[string]*raft.InmemSnapshotStore
}

// freeAddrs returns n loopback addresses whose ports were free a moment
// ago: all are held open together, then released.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// newCluster returns an in-memory group of n members.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, peers: map[string]string{}, groups: map[string]*Group{},
		trans: map[string]*raft.InmemTransport{}, logs: map[string]*raft.InmemStore{}, snaps: map[string]*raft.InmemSnapshotStore{}}
	for i := 0; i < n; i++ {
		id := string(rune('a' + i))
		c.peers[id] = "mem-" + id
		c.logs[id] = raft.NewInmemStore()
		c.snaps[id] = raft.NewInmemSnapshotStore()
	}
	return c
}

// newDiskCluster returns a group of n members on TCP and disk.
func newDiskCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, disk: true, peers: map[string]string{}, dirs: map[string]string{}, groups: map[string]*Group{}}
	for i, addr := range freeAddrs(t, n) {
		id := string(rune('a' + i))
		c.peers[id] = addr
		c.dirs[id] = t.TempDir()
	}
	return c
}

// config returns member id's Config: for an in-memory member, a new
// transport connected both ways to the others' latest ones, and its
// stores.
func (c *cluster) config(id string) Config {
	if c.disk {
		return Config{ID: id, Bind: c.peers[id], Peers: c.peers, Dir: c.dirs[id], TLS: c.tls[id]}
	}
	_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[id]))
	for other, ot := range c.trans {
		if other != id {
			tr.Connect(raft.ServerAddress(c.peers[other]), ot)
			ot.Connect(raft.ServerAddress(c.peers[id]), tr)
		}
	}
	c.trans[id] = tr
	return Config{ID: id, Peers: c.peers, Transport: tr, LogStore: c.logs[id], StableStore: c.logs[id], SnapshotStore: c.snaps[id]}
}

func (c *cluster) ids() []string {
	ids := make([]string, 0, len(c.peers))
	for id := range c.peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// open opens (or reopens) member id, closing it at the end of the test.
func (c *cluster) open(id string) *Group {
	c.t.Helper()
	g, err := Open(c.config(id))
	if err != nil {
		c.t.Fatalf("open %s: %v", id, err)
	}
	c.t.Cleanup(func() {
		if err := g.Close(); err != nil {
			c.t.Errorf("close %s: %v", id, err)
		}
	})
	c.groups[id] = g
	return g
}

func (c *cluster) openAll() {
	c.t.Helper()
	for _, id := range c.ids() {
		c.open(id)
	}
}

func (c *cluster) closeAll() {
	c.t.Helper()
	for id, g := range c.groups {
		if err := g.Close(); err != nil {
			c.t.Fatalf("close %s: %v", id, err)
		}
		delete(c.groups, id)
	}
}

// leader waits until exactly one open member leads and every other open
// member knows it, and returns it.
func (c *cluster) leader(within time.Duration) *Group {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var leaders []*Group
		for _, g := range c.groups {
			if g.IsLeader() {
				leaders = append(leaders, g)
			}
		}
		if len(leaders) > 1 {
			c.t.Fatalf("%d leaders at once", len(leaders))
		}
		if len(leaders) == 1 {
			agreed := true
			for _, g := range c.groups {
				if id, _ := g.Leader(); id != leaders[0].id {
					agreed = false
				}
			}
			if agreed {
				return leaders[0]
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no single agreed leader within %v", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) followers(leader *Group) []*Group {
	var fs []*Group
	for _, g := range c.groups {
		if g != leader {
			fs = append(fs, g)
		}
	}
	return fs
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitAll waits until pred holds on every open member.
func (c *cluster) waitAll(what string, pred func(JobState) bool) {
	c.t.Helper()
	for id, g := range c.groups {
		if s, err := g.WaitApplied(ctxFor(c.t, 3*time.Second), pred); err != nil {
			c.t.Fatalf("%s on %s: %v (state %+v)", what, id, err, s)
		}
	}
}

// waitRole reads g.Roles until it yields want.
func waitRole(t *testing.T, g *Group, want Role, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case r, ok := <-g.Roles():
			if !ok {
				t.Fatalf("%s: Roles closed before %s", g.id, want)
			}
			if r == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no %s on Roles within %v", g.id, want, within)
		}
	}
}

func TestGroupReplicatesAndRejects(t *testing.T) {
	c := newCluster(t, 3)
	c.openAll()
	t0 := time.Now()
	l := c.leader(3 * time.Second)
	t.Logf("first election: %v, leader %s", time.Since(t0), l.id)
	waitRole(t, l, RoleLeader, time.Second)
	ctx := ctxFor(t, 5*time.Second)
	hash := object("model")
	settings := json.RawMessage(`{"iterations": 100}`)

	f := c.followers(l)[0]
	if err := f.Start(ctx, "job-1", hash, settings); !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "leader is "+l.id) {
		t.Fatalf("Start on follower: %v, want ErrNotLeader naming %s", err, l.id)
	}
	if _, err := f.TakeEpoch(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("TakeEpoch on follower: %v, want ErrNotLeader", err)
	}

	before := time.Now()
	if err := l.Start(ctx, "job-1", hash, settings); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	time.Sleep(10 * time.Millisecond)
	if err := l.Start(ctx, "job-1", hash, json.RawMessage(`{}`)); err != nil {
		t.Fatalf("repeated Start: %v", err)
	}
	if err := l.Start(ctx, "job-2", hash, settings); !errors.Is(err, ErrRejected) {
		t.Fatalf("Start of another job: %v, want ErrRejected", err)
	}
	if err := l.Start(ctx, "job-1", object("other model"), settings); !errors.Is(err, ErrRejected) {
		t.Fatalf("Start with another model: %v, want ErrRejected", err)
	}
	epoch, err := l.TakeEpoch(ctx)
	if err != nil || epoch != 1 {
		t.Fatalf("TakeEpoch = %d, %v; want 1", epoch, err)
	}
	if err := l.propose(ctx, command{Type: cmdTakeEpoch, Epoch: 3, Leader: l.id}); !errors.Is(err, ErrRejected) {
		t.Fatalf("wrong epoch: %v, want ErrRejected", err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job-1", 2, 1)); !errors.Is(err, ErrRejected) {
		t.Fatalf("checkpoint of a future epoch: %v, want ErrRejected", err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job-1", 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job-1", 1, 4)); !errors.Is(err, ErrRejected) {
		t.Fatalf("older checkpoint: %v, want ErrRejected", err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job-2", 1, 6)); !errors.Is(err, ErrRejected) {
		t.Fatalf("checkpoint of another job: %v, want ErrRejected", err)
	}
	big := manifest("job-1", 1, 6)
	big.Meta = json.RawMessage(`"` + strings.Repeat("x", MaxCommandBytes) + `"`)
	if err := l.SaveCheckpoint(ctx, big); err == nil || !strings.Contains(err.Error(), "byte limit") {
		t.Fatalf("oversized checkpoint: %v, want the size limit", err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job-1", 1, 6)); err != nil {
		t.Fatal(err)
	}

	// Every member sees the checkpoint; Changed fired on a follower.
	c.waitAll("checkpoint 6", func(s JobState) bool { return s.Checkpoint != nil && s.Checkpoint.Iteration == 6 })
	select {
	case <-f.Changed():
	default:
		t.Fatal("Changed not signalled on a follower")
	}

	result := json.RawMessage(`{"objective": 42}`)
	if err := l.Finish(ctx, result); err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(ctx, result); err != nil {
		t.Fatalf("repeated Finish: %v", err)
	}
	if err := l.Finish(ctx, json.RawMessage(`1`)); !errors.Is(err, ErrRejected) {
		t.Fatalf("Finish with another result: %v, want ErrRejected", err)
	}
	c.waitAll("done", func(s JobState) bool { return s.Done })

	want := JobState{
		JobStart: JobStart{
			Job: "job-1", ModelHash: hash, Settings: json.RawMessage(`{"iterations":100}`),
			Started: l.State().Started, // the first Start's
		},
		Epoch: 1, Leader: l.id, Checkpoint: mp(manifest("job-1", 1, 6)),
		Done: true, Result: json.RawMessage(`{"objective":42}`),
	}
	if want.Started.Before(before) || want.Started.After(after) {
		t.Errorf("started %v, want the first Start's time, between %v and %v", want.Started, before, after)
	}
	for id, g := range c.groups {
		if got := g.State(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s state:\n got %+v\nwant %+v", id, got, want)
		}
	}
}

func TestGroupFailover(t *testing.T) {
	c := newCluster(t, 3)
	c.openAll()
	l := c.leader(3 * time.Second)
	ctx := ctxFor(t, 5*time.Second)
	if err := l.Start(ctx, "job", object("m"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TakeEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job", 1, 7)); err != nil {
		t.Fatal(err)
	}

	// Kill the leader.
	old := l
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.groups, old.id)
	t0 := time.Now()
	nl := c.leader(5 * time.Second)
	elected := time.Since(t0)
	t.Logf("failover: %s elected %v after %s was closed", nl.id, elected, old.id)
	waitRole(t, nl, RoleLeader, time.Second)

	// The old leader refuses everything.
	if err := old.SaveCheckpoint(ctx, manifest("job", 1, 8)); !errors.Is(err, ErrNotLeader) || !errors.Is(err, ErrClosed) {
		t.Fatalf("SaveCheckpoint on a closed group: %v, want ErrNotLeader and ErrClosed", err)
	}
	if _, err := old.WaitApplied(ctx, func(JobState) bool { return false }); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitApplied on a closed group: %v, want ErrClosed", err)
	}

	epoch, err := nl.TakeEpoch(ctx)
	if err != nil || epoch != 2 {
		t.Fatalf("TakeEpoch on the new leader = %d, %v; want 2", epoch, err)
	}
	s := nl.State()
	if s.Checkpoint == nil || s.Checkpoint.Iteration != 7 || s.Leader != nl.id || s.Failovers != 1 {
		t.Fatalf("new leader's state %+v: want checkpoint 7, leader %s, 1 failover", s, nl.id)
	}
	// A checkpoint of the deposed epoch is refused, the new epoch's taken.
	if err := nl.SaveCheckpoint(ctx, manifest("job", 1, 8)); !errors.Is(err, ErrRejected) {
		t.Fatalf("checkpoint of the old epoch: %v, want ErrRejected", err)
	}
	if err := nl.SaveCheckpoint(ctx, manifest("job", 2, 8)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("epoch 2 checkpoint", func(s JobState) bool {
		return s.Epoch == 2 && s.Checkpoint != nil && s.Checkpoint.Iteration == 8
	})
}

// TestGroupRestart restarts every member from its directory: the real
// TCP transport, raft-wal and file snapshots.
func TestGroupRestart(t *testing.T) {
	c := newDiskCluster(t, 3)
	c.openAll()
	l := c.leader(3 * time.Second)
	ctx := ctxFor(t, 8*time.Second)
	if err := l.Start(ctx, "job", object("m"), json.RawMessage(`{"k":"v"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TakeEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, manifest("job", 1, 3)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("checkpoint 3", func(s JobState) bool { return s.Checkpoint != nil && s.Checkpoint.Iteration == 3 })
	// Snapshot every member at iteration 3, then log iteration 4 after
	// the snapshot: the restart must restore one and replay the other.
	for id, g := range c.groups {
		if err := g.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot %s: %v", id, err)
		}
		if snaps, _ := filepath.Glob(filepath.Join(c.dirs[id], "snapshots", "*", "state.bin")); len(snaps) == 0 {
			t.Fatalf("%s: no snapshot on disk", id)
		}
	}
	if err := l.SaveCheckpoint(ctx, manifest("job", 1, 4)); err != nil {
		t.Fatal(err)
	}
	c.waitAll("checkpoint 4", func(s JobState) bool { return s.Checkpoint != nil && s.Checkpoint.Iteration == 4 })
	want := l.State()

	c.closeAll()
	for _, id := range c.ids() {
		g := c.open(id)
		// NewRaft restores the snapshot before Open returns; the log
		// after it is applied only once a leader commits again.
		if s := g.State(); s.Checkpoint == nil || s.Checkpoint.Iteration < 3 || s.Job != "job" {
			t.Fatalf("%s right after reopen: %+v, want the snapshot's state", id, s)
		}
	}
	l = c.leader(3 * time.Second)
	c.waitAll("state after restart", func(s JobState) bool { return reflect.DeepEqual(s, want) })
	epoch, err := l.TakeEpoch(ctx)
	if err != nil || epoch != 2 {
		t.Fatalf("TakeEpoch after restart = %d, %v; want 2", epoch, err)
	}
	if s := l.State(); s.Failovers != 1 || s.Checkpoint.Iteration != 4 {
		t.Fatalf("after restart and TakeEpoch: %+v", s)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	peers := map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no id", Config{Peers: peers, Dir: dir}, "empty ID"},
		{"no peers", Config{ID: "a", Dir: dir}, "no peers"},
		{"no dir", Config{ID: "a", Peers: peers}, "empty Dir"},
		{"id not a peer", Config{ID: "z", Peers: peers, Dir: dir}, `ID "z" is not in Peers`},
		{"bad peer", Config{ID: "a", Peers: map[string]string{"a": "127.0.0.1:1", "b": "nowhere"}, Dir: dir}, "peer b"},
		{"empty peer id", Config{ID: "a", Peers: map[string]string{"a": "127.0.0.1:1", "": "127.0.0.1:2"}, Dir: dir}, "empty id"},
		{"bad bind", Config{ID: "a", Bind: "127.0.0.1", Peers: peers, Dir: dir}, "bind"},
		{"log store alone", Config{ID: "a", Peers: peers, LogStore: raft.NewInmemStore(), SnapshotStore: raft.NewInmemSnapshotStore()}, "together"},
		{"in-memory stores need a snapshot store", Config{ID: "a", Peers: peers, LogStore: raft.NewInmemStore(), StableStore: raft.NewInmemStore()}, "empty Dir"},
		{"negative timeout", Config{ID: "a", Peers: peers, Dir: dir, ElectionTimeout: -1}, "negative timeout"},
		{"lease over heartbeat", Config{ID: "a", Peers: peers, Dir: dir, LeaderLeaseTimeout: time.Second}, "LeaderLeaseTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Open(tt.cfg)
			if err == nil {
				g.Close()
				t.Fatalf("Open(%+v) succeeded, want error containing %q", tt.cfg, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want error containing %q", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused Open left files in Dir: %v", entries)
	}
}

// TestSingleMember runs one member on the default stores in a directory
// (raft-wal, file snapshots, the directory lock) over an in-memory
// transport.
func TestSingleMember(t *testing.T) {
	addr := "mem-solo"
	mem := func() raft.Transport { _, tr := raft.NewInmemTransport(raft.ServerAddress(addr)); return tr }
	g, err := Open(Config{ID: "solo", Peers: map[string]string{"solo": addr}, Dir: t.TempDir(), Transport: mem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	dir := g.stores.lock.Name()
	if _, err := Open(Config{ID: "solo", Peers: map[string]string{"solo": addr}, Dir: filepath.Dir(dir), Transport: mem()}); err == nil || !strings.Contains(err.Error(), "directory in use") {
		t.Fatalf("second Open of the same Dir: %v, want \"directory in use\"", err)
	}
	waitRole(t, g, RoleLeader, 3*time.Second)
	ctx := ctxFor(t, 3*time.Second)
	if err := g.Start(ctx, "j", object("m"), nil); err != nil {
		t.Fatal(err)
	}
	if e, err := g.TakeEpoch(ctx); err != nil || e != 1 {
		t.Fatalf("TakeEpoch = %d, %v", e, err)
	}
	if id, a := g.Leader(); id != "solo" || a != addr {
		t.Fatalf("Leader() = %s, %s", id, a)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for range g.Roles() { // drained, then closed by Close
	}
}
