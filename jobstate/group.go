package jobstate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/ddrun/ddrun/checkpoint"
)

// Default timeouts, tuned for a LAN.
const (
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	DefaultCommitTimeout      = 50 * time.Millisecond
)

// DefaultProposeTimeout bounds a proposal (or TakeEpoch) whose context has
// no deadline.
const DefaultProposeTimeout = 5 * time.Second

// MaxCommandBytes is the largest encoded command a Group proposes. Entries
// are metadata (a manifest is a few KB); bulk data belongs in a
// checkpoint.Store, never in the log.
const MaxCommandBytes = 1 << 20

const (
	transportMaxPool = 3
	transportTimeout = 5 * time.Second
	snapshotsRetain  = 2
)

// Config configures one member of a Group.
type Config struct {
	// ID is this node's raft id; it must be a key of Peers.
	ID string
	// Bind is the host:port to listen on for raft traffic. The host may be
	// empty (every interface). Empty Bind means Peers[ID]. Other members
	// reach this one at Peers[ID], whatever Bind is.
	Bind string
	// Peers maps the id of every member, this one included, to its
	// host:port. It is used to bootstrap the group the first time Dir is
	// used; later the configuration stored in the log rules.
	Peers map[string]string
	// Dir holds the raft-wal log and stable store (Dir/wal) and the
	// snapshots (Dir/snapshots); Open reopens what it finds there. A
	// member locks Dir (Dir/LOCK) while open: a second Open of the same
	// Dir fails instead of waiting. Dir may be empty only when LogStore,
	// StableStore and SnapshotStore are all given.
	Dir string
	// Transport, when not nil, carries raft's traffic (for example a
	// raft.InmemTransport in tests) instead of a TCP transport listening
	// on Bind; Peers then holds addresses in its terms and Bind is not
	// used. Like its own transport, the Group's Close closes it (raft's
	// shutdown does): reopening a member needs a new one.
	Transport raft.Transport
	// LogStore and StableStore, given together, replace raft-wal in
	// Dir/wal; SnapshotStore replaces the file snapshots in Dir/snapshots
	// (raft.NewInmemStore and raft.NewInmemSnapshotStore in tests). The
	// caller owns the stores given: Close leaves them open, so a member
	// can be reopened on them.
	LogStore      raft.LogStore
	StableStore   raft.StableStore
	SnapshotStore raft.SnapshotStore
	// TLS, when not nil, makes the TCP transport mutual TLS (MutualTLS):
	// a member accepts and dials only members whose certificates its CA
	// signed. Not used with Transport.
	TLS *tls.Config
	// Logger receives raft's own logs (Debug, Info, Warn, Error) and this
	// package's. Nil discards them.
	Logger *slog.Logger
	// Raft timeouts; zero means DefaultHeartbeatTimeout,
	// DefaultElectionTimeout, DefaultLeaderLeaseTimeout. raft requires
	// LeaderLeaseTimeout <= HeartbeatTimeout <= ElectionTimeout.
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
}

// Role is a member's role in the group as reported on Group.Roles.
type Role string

// Roles. A candidate, which has no leader to follow yet, is reported as a
// follower: it must not drive the job either.
const (
	RoleLeader   Role = "leader"
	RoleFollower Role = "follower"
)

// rolesBuffer is the capacity of the Roles channel.
const rolesBuffer = 16

var (
	// ErrNotLeader is wrapped by the proposing methods when this node is
	// not the leader, or stops being the leader before its proposal is
	// committed. The proposal may or may not have been committed in the
	// latter case; every command is safe to retry on the new leader
	// (Start, Finish and SaveCheckpoint of the same manifest are
	// idempotent; TakeEpoch reads the epoch anew each call).
	ErrNotLeader = errors.New("jobstate: not the leader")
	// ErrClosed is wrapped (with ErrNotLeader for proposals) once the
	// group is closed.
	ErrClosed = errors.New("jobstate: group closed")
)

// Group is one member of the Raft group replicating a JobState.
type Group struct {
	id   string
	log  *slog.Logger
	fsm  *fsm
	raft *raft.Raft

	stores *stores

	roles    chan Role
	observer *raft.Observer
	closed   chan struct{}
	fwdDone  chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Open validates cfg, opens (or creates) the stores in cfg.Dir, bootstraps
// the group from cfg.Peers when Dir holds no raft state, and starts raft.
// The node starts as a follower; use Roles or IsLeader to learn when it
// leads.
func Open(cfg Config) (*Group, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("raft_id", cfg.ID)
	hl := newHCLogger(logger)

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hl
	rc.HeartbeatTimeout = orDefault(cfg.HeartbeatTimeout, DefaultHeartbeatTimeout)
	rc.ElectionTimeout = orDefault(cfg.ElectionTimeout, DefaultElectionTimeout)
	rc.LeaderLeaseTimeout = orDefault(cfg.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	rc.CommitTimeout = DefaultCommitTimeout
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("jobstate: open %s: %w", cfg.ID, err)
	}

	st := &stores{}
	fail := func(format string, args ...any) (*Group, error) {
		if err := st.close(); err != nil {
			logger.Warn("jobstate: close after a failed open", "err", err)
		}
		return nil, fmt.Errorf("jobstate: open %s: "+format, append([]any{cfg.ID}, args...)...)
	}
	var advertise *net.TCPAddr
	if cfg.Transport == nil {
		var err error
		if advertise, err = net.ResolveTCPAddr("tcp", cfg.Peers[cfg.ID]); err != nil {
			return fail("resolve own address %s: %w", cfg.Peers[cfg.ID], err)
		}
	}
	logs, stable, snaps := cfg.LogStore, cfg.StableStore, cfg.SnapshotStore
	walDir := filepath.Join(cfg.Dir, "wal")
	if logs == nil || snaps == nil {
		mk := cfg.Dir
		if logs == nil {
			mk = walDir
		}
		if err := os.MkdirAll(mk, 0o755); err != nil {
			return fail("%w", err)
		}
		var err error
		if st.lock, err = lockDir(cfg.Dir); err != nil {
			return fail("%w", err)
		}
	}
	if logs == nil {
		// raft-wal v0.4.0's Close leaves its metadata database open (and
		// its file locked); owning it lets Close release it, so that a
		// member can be reopened in the same process.
		st.meta = &metadb.BoltMetaDB{}
		var err error
		if st.wal, err = wal.Open(walDir, wal.WithMetaStore(st.meta), wal.WithLogger(hl.Named("wal"))); err != nil {
			return fail("raft-wal in %s: %w", walDir, err)
		}
		logs, stable = st.wal, st.wal
	}
	if snaps == nil {
		var err error
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, snapshotsRetain, hl.Named("snapshots")); err != nil {
			return fail("snapshot store in %s: %w", cfg.Dir, err)
		}
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fail("inspect %s: %w", cfg.Dir, err)
	}
	trans, bind := cfg.Transport, ""
	if trans == nil {
		if bind = cfg.Bind; bind == "" {
			bind = cfg.Peers[cfg.ID]
		}
		if cfg.TLS == nil {
			st.trans, err = raft.NewTCPTransportWithLogger(bind, advertise, transportMaxPool, transportTimeout, hl.Named("transport"))
		} else {
			var stream *tlsStream
			if stream, err = newTLSStream(bind, advertise, cfg.TLS); err == nil {
				st.trans = raft.NewNetworkTransportWithLogger(stream, transportMaxPool, transportTimeout, hl.Named("transport"))
			}
		}
		if err != nil {
			return fail("listen on %s: %w", bind, err)
		}
		trans = st.trans
	}
	if !has {
		err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, bootstrapConfig(cfg.Peers))
		switch {
		case err == nil:
			logger.Info("jobstate: bootstrapped group", "peers", len(cfg.Peers), "dir", cfg.Dir)
		case !errors.Is(err, raft.ErrCantBootstrap):
			return fail("bootstrap: %w", err)
		}
	}

	f := newFSM()
	r, err := raft.NewRaft(rc, f, logs, stable, snaps, trans)
	if err != nil {
		return fail("start raft: %w", err)
	}
	g := &Group{
		id:      cfg.ID,
		log:     logger,
		fsm:     f,
		raft:    r,
		stores:  st,
		roles:   make(chan Role, rolesBuffer),
		closed:  make(chan struct{}),
		fwdDone: make(chan struct{}),
	}
	obs := make(chan raft.Observation, 64)
	g.observer = raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RaftState)
		return ok
	})
	r.RegisterObserver(g.observer)
	go g.forwardRoles(obs)
	logger.Info("jobstate: opened", "bind", bind, "advertise", cfg.Peers[cfg.ID], "existing_state", has)
	return g, nil
}

// stores are what Open opens besides raft itself (not what Config gave
// it), closed in reverse order.
type stores struct {
	lock  *os.File
	meta  *metadb.BoltMetaDB
	wal   *wal.WAL
	trans *raft.NetworkTransport
}

func (s *stores) close() error {
	var errs []error
	if s.trans != nil {
		if err := s.trans.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close transport: %w", err))
		}
	}
	if s.wal != nil {
		if err := s.wal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft-wal: %w", err))
		}
	}
	if s.meta != nil {
		if err := s.meta.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft-wal metadata: %w", err))
		}
	}
	if s.lock != nil {
		if err := unlockDir(s.lock); err != nil {
			errs = append(errs, fmt.Errorf("unlock dir: %w", err))
		}
	}
	*s = stores{}
	return errors.Join(errs...)
}

func (c Config) check() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("jobstate: config: empty ID")
	case len(c.Peers) == 0:
		return fmt.Errorf("jobstate: config %s: no peers", c.ID)
	case c.Dir == "" && (c.LogStore == nil || c.SnapshotStore == nil):
		return fmt.Errorf("jobstate: config %s: empty Dir", c.ID)
	case (c.LogStore == nil) != (c.StableStore == nil):
		return fmt.Errorf("jobstate: config %s: give LogStore and StableStore together", c.ID)
	case c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0:
		return fmt.Errorf("jobstate: config %s: negative timeout", c.ID)
	}
	if _, ok := c.Peers[c.ID]; !ok {
		return fmt.Errorf("jobstate: config: ID %q is not in Peers", c.ID)
	}
	ids := make([]string, 0, len(c.Peers))
	for id := range c.Peers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if id == "" {
			return fmt.Errorf("jobstate: config %s: peer with empty id", c.ID)
		}
		if c.Transport != nil {
			if c.Peers[id] == "" {
				return fmt.Errorf("jobstate: config %s: peer %s: empty address", c.ID, id)
			}
			continue // the transport's own addresses
		}
		if err := checkAddr(c.Peers[id]); err != nil {
			return fmt.Errorf("jobstate: config %s: peer %s: %w", c.ID, id, err)
		}
	}
	if c.Bind != "" && c.Transport == nil {
		if err := checkHostPort(c.Bind, true); err != nil {
			return fmt.Errorf("jobstate: config %s: bind: %w", c.ID, err)
		}
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func bootstrapConfig(peers map[string]string) raft.Configuration {
	var c raft.Configuration
	for id, addr := range peers {
		c.Servers = append(c.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(id),
			Address:  raft.ServerAddress(addr),
		})
	}
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].ID < c.Servers[j].ID })
	return c
}

// forwardRoles turns raft state observations into Roles values until the
// group is closed, then closes the Roles channel.
func (g *Group) forwardRoles(obs <-chan raft.Observation) {
	defer close(g.fwdDone)
	defer close(g.roles)
	last := Role("")
	emit := func(s raft.RaftState) {
		if s == raft.Shutdown {
			return
		}
		r := RoleFollower
		if s == raft.Leader {
			r = RoleLeader
		}
		if r == last {
			return
		}
		last = r
		g.log.Info("jobstate: role", "role", string(r))
		// Never block: when the receiver is rolesBuffer behind, drop the
		// oldest value so the newest (the current role) always gets in.
		for {
			select {
			case g.roles <- r:
				return
			default:
			}
			select {
			case <-g.roles:
			default:
			}
		}
	}
	emit(g.raft.State())
	for {
		select {
		case <-g.closed:
			return
		case o := <-obs:
			if _, ok := o.Data.(raft.RaftState); ok {
				// Read the state now rather than trusting the
				// observation: observations can be dropped, the
				// current state cannot be stale.
				emit(g.raft.State())
			}
		}
	}
}

// Roles returns a channel receiving this member's role: first the role at
// Open (a follower), then every change, in order and without repeats. It
// is buffered and never blocks raft: a receiver that falls more than 16
// values behind loses the oldest ones, never the newest, so the last value
// received is always the current role. Close closes it. Use IsLeader for
// an authoritative answer at a given instant.
func (g *Group) Roles() <-chan Role { return g.roles }

// IsLeader reports whether this member currently is the leader.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Leader returns the id and address of the leader as this member knows it,
// or empty strings when it knows none.
func (g *Group) Leader() (id, addr string) {
	a, i := g.raft.LeaderWithID()
	return string(i), string(a)
}

// State returns a copy of the state this member has applied.
func (g *Group) State() JobState {
	s, _ := g.fsm.get()
	return s
}

// Changed returns a channel signalled after every applied command (and
// snapshot restore). Signals are coalesced: one pending signal stands for
// any number of changes, so read State after receiving. It is never
// closed.
func (g *Group) Changed() <-chan struct{} { return g.fsm.notify }

// WaitApplied blocks until pred holds for the applied state and returns
// that state. pred is called with a copy and must not block. It returns
// early with ctx's error, or ErrClosed when the group is closed.
func (g *Group) WaitApplied(ctx context.Context, pred func(JobState) bool) (JobState, error) {
	for {
		s, changed := g.fsm.get()
		if pred(s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, fmt.Errorf("jobstate: wait applied on %s: %w", g.id, ctx.Err())
		case <-g.closed:
			return s, fmt.Errorf("jobstate: wait applied on %s: %w", g.id, ErrClosed)
		}
	}
}

// Start records the job this group runs and, the first time, when it
// started (JobState.Started, by this member's clock). It is idempotent for
// the same job and model hash (the first settings and start time stay); a
// different job or model hash is rejected (ErrRejected).
func (g *Group) Start(ctx context.Context, job, modelHash string, settings json.RawMessage) error {
	return g.propose(ctx, command{Type: cmdStart, JobStart: JobStart{Job: job, ModelHash: modelHash, Settings: settings, Started: time.Now().UTC()}})
}

// TakeEpoch makes this member, which must be the leader, the driver of the
// job: it waits until every earlier entry is applied here (a raft Barrier)
// and commits epoch current+1 with this member's id. It returns the new
// epoch. Checkpoints must carry it.
func (g *Group) TakeEpoch(ctx context.Context) (uint64, error) {
	if err := g.checkLeader("take epoch"); err != nil {
		return 0, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := g.wait(ctx, "take epoch: barrier", g.raft.Barrier(proposeTimeout(ctx))); err != nil {
		return 0, err
	}
	next := g.State().Epoch + 1
	if err := g.propose(ctx, command{Type: cmdTakeEpoch, Epoch: next, Leader: g.id}); err != nil {
		return 0, err
	}
	return next, nil
}

// SaveCheckpoint commits m as the latest checkpoint. m.Epoch must be the
// current epoch, m.Iteration at least the committed one's, and m must
// pass Validate; the blobs it names must already be stored.
func (g *Group) SaveCheckpoint(ctx context.Context, m checkpoint.Manifest) error {
	return g.propose(ctx, command{Type: cmdCheckpoint, Manifest: &m})
}

// Finish marks the job done with its result. Repeating it with the same
// result is a no-op; another result is rejected. Keep result small (see
// MaxCommandBytes).
func (g *Group) Finish(ctx context.Context, result json.RawMessage) error {
	return g.propose(ctx, command{Type: cmdFinish, Result: result})
}

// Close stops raft, closes the transport and the stores. It is safe to
// call more than once; later calls return the first call's error.
func (g *Group) Close() error {
	g.closeOnce.Do(func() {
		close(g.closed)
		var errs []error
		if err := g.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("shutdown raft: %w", err))
		}
		g.raft.DeregisterObserver(g.observer)
		<-g.fwdDone
		if err := g.stores.close(); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			g.closeErr = fmt.Errorf("jobstate: close %s: %w", g.id, err)
		}
		g.log.Info("jobstate: closed")
	})
	return g.closeErr
}

// propose encodes c, applies it through raft and returns the state
// machine's verdict.
func (g *Group) propose(ctx context.Context, c command) error {
	what := c.Type
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("jobstate: %s: encode: %w", what, err)
	}
	if len(data) > MaxCommandBytes {
		return fmt.Errorf("jobstate: %s: command is %d bytes, over the %d byte limit: bulk data belongs in the checkpoint store, not the log", what, len(data), MaxCommandBytes)
	}
	if err := g.checkLeader(what); err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	f := g.raft.Apply(data, proposeTimeout(ctx))
	if err := g.wait(ctx, what, f); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return fmt.Errorf("jobstate: %s: %w", what, err)
	}
	return nil
}

// checkLeader fails fast, before a proposal is queued, when this member is
// not the leader.
func (g *Group) checkLeader(what string) error {
	select {
	case <-g.closed:
		return fmt.Errorf("jobstate: %s on %s: %w: %w", what, g.id, ErrNotLeader, ErrClosed)
	default:
	}
	if g.IsLeader() {
		return nil
	}
	id, addr := g.Leader()
	if id == "" {
		return fmt.Errorf("jobstate: %s on %s: %w (no leader known)", what, g.id, ErrNotLeader)
	}
	return fmt.Errorf("jobstate: %s on %s: %w (leader is %s at %s)", what, g.id, ErrNotLeader, id, addr)
}

// wait waits for f or ctx. When ctx ends first the operation may still
// complete later.
func (g *Group) wait(ctx context.Context, what string, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("jobstate: %s on %s: %w", what, g.id, ctx.Err())
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("jobstate: %s on %s: %w: %w", what, g.id, ErrNotLeader, ErrClosed)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("jobstate: %s on %s: %w: %v", what, g.id, ErrNotLeader, err)
	default:
		return fmt.Errorf("jobstate: %s on %s: %w", what, g.id, err)
	}
}

// withDefaultTimeout bounds a ctx without deadline by
// DefaultProposeTimeout.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultProposeTimeout)
}

// proposeTimeout is the time left to ctx, which has a deadline: raft's
// enqueue timeout.
func proposeTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 {
			return d
		}
		return time.Millisecond
	}
	return DefaultProposeTimeout
}
