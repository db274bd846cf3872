package cluster

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/solver"
	"github.com/ddrun/ddrun/transport"
)

// TestScenarios runs every script in testdata/*.txt (in the manner of
// etcd-io/raft's testdata scenarios): the failure cases of jobs, whole-model
// and sharded (a worker killed, gone mute or hung, a coordinator cut off;
// failover to a spare, continuing on the workers left, resuming from a
// checkpoint, a new epoch taking the workers over), each against the
// undisturbed run. The language is in scenario's doc; the harness is
// TestCluster (testing.go). A script runs over the in-process transport,
// or over each transport its first line names (transports inproc nats).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			lines := readScript(t, f)
			if len(lines) == 0 || lines[0].cmd != "transports" {
				runScenario(t, "inproc", lines)
				return
			}
			for _, tr := range strings.Fields(lines[0].args) {
				t.Run(tr, func(t *testing.T) { runScenario(t, tr, lines[1:]) })
			}
		})
	}
}

// scriptLine is a command of a script.
type scriptLine struct {
	cmd, args string
	where     string // "file:n: text", for messages
}

// readScript reads the commands of the script at path.
func readScript(t *testing.T, path string) []scriptLine {
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []scriptLine
	for n, text := range strings.Split(string(script), "\n") {
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if text = strings.TrimSpace(text); text != "" {
			cmd, args, _ := strings.Cut(text, " ")
			lines = append(lines, scriptLine{cmd, strings.TrimSpace(args), fmt.Sprintf("%s:%d: %s", path, n+1, text)})
		}
	}
	return lines
}

// scenario interprets one script, a command a line ('#' starts a comment):
//
//	transports T...                          (first line only) run the script over each
//	                                         of inproc, nats, faulty:SEED (see runScenario)
//	faults drop=P duplicate=P delay=P maxdelay=D   with faulty:SEED, before any worker
//	model potts HxWxL rho=R seed=S KEY=V...  the model and its options (see model)
//	sharded parts=N                          runs from now on are sharded (see run)
//	start NAME...                            workers (sharded ones after sharded)
//	mute NAME | hung NAME                    TestCluster.StartMute / StartHung
//	at iter N: CMD; CMD...                   during the next run, once at iteration N
//	on assigned NAME: CMD; CMD...            when mute worker NAME takes a part
//	run KEY=VALUE... [fails]                 a job (see parseRun)
//	expect KEY=VALUE...                      the last run's stats (see stat)
//	expect [REF] status=S
//	expect result == REF | result ~ REF      compare / closeTo against REF
//	expect F == REF[.F] | F >= REF[.F]       F: primal, dual or iterations, to 1e-9
//	expect F === REF                         bit for bit
//	expect bound                             the dual bounds the primal
//	expect faults                            every kind of fault was injected
//	expect assignment                        a sharded run delivered every variable, scoring the primal
//	expect loads=N                           the sharded parts the workers read in the last run
//
// where CMD is start NAME, kill NAME, pause NAME D (TestCluster.Pause:
// silent for D) or sever (cut the running coordinator off), and REF is
// undisturbed (the single-process solve) or first (the script's first
// run). Every event of a run must have happened by its end.
type scenario struct {
	t      *testing.T
	o      TestClusterOptions
	faults *transport.FaultOptions // over faulty:SEED
	faulty *transport.Faulty       // once the cluster started
	c      *TestCluster            // see cluster
	line   string                  // "file:n: text", for messages

	m           *model.Model
	opts        consensus.Options
	undisturbed *solver.Result
	shard       *shard.Layout // with sharded
	stateDir    string        // where a sharded run's parts save their states

	events     []*event                   // for the next run
	first      *solver.Result             // the first run's result
	last       scenarioRun                // the latest run
	saved      *saved                     // the states of the latest run that took any
	savedEpoch uint64                     // and its epoch
	resume     *consensus.State           // the state the latest run resumed from
	bg         sync.WaitGroup             // runs left in the background
	mutes      map[string]<-chan struct{} // mute workers' assigned channels
	loads      atomic.Int64               // the sharded parts the workers read in the latest run
	done       chan struct{}              // closed when the test ends
}

// event is a list of commands run once, at an iteration or when a mute
// worker is assigned a part.
type event struct {
	iter  int
	cmds  []string
	line  string // where the script says it
	fired chan struct{}
	once  sync.Once
}

type scenarioRun struct {
	res   solver.Result
	stats RunStats
	took  time.Duration
	// x, of a sharded run, is the assignment delivered, and delivered
	// how many variables' states arrived.
	x         []int
	delivered int
}

// runScenario runs a script's lines over transport tr: inproc
// (transport.InProc), nats (an embedded NATS server, each worker and
// coordinator a client of its own), or faulty:SEED (transport.Faulty over
// an in-process transport, its faults seeded with SEED, their rates set by
// the command faults).
func runScenario(t *testing.T, tr string, lines []scriptLine) {
	s := &scenario{t: t, mutes: map[string]<-chan struct{}{}, done: make(chan struct{})}
	switch seed, faulty := strings.CutPrefix(tr, "faulty:"); {
	case tr == "inproc":
	case tr == "nats":
		srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Host: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown) // after the cluster's clean-up
		s.o.NATS = &transport.NATSOptions{URL: srv.URL()}
	case faulty:
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			t.Fatalf("transport %s: %v", tr, err)
		}
		s.faults = &transport.FaultOptions{Seed: n}
	default:
		t.Fatalf("unknown transport %s: want inproc, nats or faulty:SEED", tr)
	}
	// Before the workers stop: a severed run ends on its own, its steps
	// timing out.
	t.Cleanup(func() { close(s.done); s.bg.Wait() })
	for _, l := range lines {
		s.line = l.where
		s.do(l.cmd, l.args)
	}
}

// cluster returns the scenario's cluster, started on first use.
func (s *scenario) cluster() *TestCluster {
	if s.c != nil {
		return s.c
	}
	if s.faults != nil {
		inner := transport.NewInProc()
		s.t.Cleanup(func() { inner.Close() }) // after the cluster's clean-up
		s.faulty = transport.NewFaulty(inner, *s.faults)
		s.o.Transport = s.faulty
	}
	s.c = NewTestCluster(s.t, s.o)
	return s.c
}

// setFaults reads the faults command: drop=P duplicate=P delay=P
// maxdelay=D (transport.FaultOptions), before the cluster starts.
func (s *scenario) setFaults(f []string) {
	if s.faults == nil || s.c != nil {
		s.fatalf("faults come first, over transport faulty:SEED")
	}
	for _, kv := range f {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "drop":
			s.faults.Drop, err = strconv.ParseFloat(v, 64)
		case "duplicate":
			s.faults.Duplicate, err = strconv.ParseFloat(v, 64)
		case "delay":
			s.faults.Delay, err = strconv.ParseFloat(v, 64)
		case "maxdelay":
			s.faults.MaxDelay, err = time.ParseDuration(v)
		default:
			s.fatalf("unknown fault %s", k)
		}
		if err != nil {
			s.fatalf("%s: %v", kv, err)
		}
	}
}

func (s *scenario) fatalf(format string, a ...any) {
	s.t.Helper()
	s.t.Fatalf("%s: %s", s.line, fmt.Sprintf(format, a...))
}

func (s *scenario) errorf(format string, a ...any) {
	s.t.Helper()
	s.t.Errorf("%s: %s", s.line, fmt.Sprintf(format, a...))
}

func (s *scenario) do(cmd, args string) {
	switch cmd {
	case "model":
		s.model(strings.Fields(args))
	case "sharded":
		var parts int
		if _, err := fmt.Sscanf(args, "parts=%d", &parts); err != nil || s.m == nil {
			s.fatalf("want sharded parts=N after model")
		}
		job, loadShard := shardFixture(s.t, s.m, parts)
		s.shard, s.stateDir = job, s.t.TempDir()
		s.cluster().Sharded(func(ctx context.Context, spec []byte) (*consensus.Part, error) {
			s.loads.Add(1)
			return loadShard(ctx, spec)
		})
	case "start":
		s.cluster().Start(strings.Fields(args)...)
	case "mute":
		s.mutes[args] = s.cluster().StartMute(args)
	case "hung":
		s.mutes[args] = s.cluster().StartHung(args)
	case "at":
		when, cmds, ok := strings.Cut(args, ":")
		var iter int
		if _, err := fmt.Sscanf(when, "iter %d", &iter); !ok || err != nil {
			s.fatalf("want at iter N: CMD; ...")
		}
		s.events = append(s.events, &event{iter: iter, cmds: splitCmds(cmds), fired: make(chan struct{}), line: s.line})
	case "on":
		when, cmds, ok := strings.Cut(args, ":")
		name, isAssigned := strings.CutPrefix(when, "assigned ")
		assigned, isMute := s.mutes[name]
		if !ok || !isAssigned || !isMute {
			s.fatalf("want on assigned MUTE: CMD; ...")
		}
		list, line := splitCmds(cmds), s.line
		go func() {
			select {
			case <-assigned:
			case <-s.done:
				return
			}
			for _, c := range list {
				s.event(line, c, nil)
			}
		}()
	case "faults":
		s.setFaults(strings.Fields(args))
	case "transports":
		s.fatalf("transports goes on a script's first line")
	case "run":
		s.run(strings.Fields(args))
	case "expect":
		s.expect(args)
	default:
		s.fatalf("unknown command %s", cmd)
	}
}

func splitCmds(list string) []string {
	var cmds []string
	for _, c := range strings.Split(list, ";") {
		if c = strings.TrimSpace(c); c != "" {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// event runs one command of an event (at line of the script): start
// NAME, kill NAME, pause NAME D, or sever (coord, the running coordinator's transport).
func (s *scenario) event(line, cmd string, coord *Severable) {
	verb, name, _ := strings.Cut(cmd, " ")
	switch {
	case verb == "start" && name != "":
		s.cluster().Start(name)
	case verb == "kill" && name != "":
		s.cluster().Kill(name)
	case verb == "pause" && name != "":
		who, how, _ := strings.Cut(name, " ")
		d, err := time.ParseDuration(how)
		if err != nil {
			s.t.Errorf("%s: pause %s: %v", line, name, err)
			return
		}
		s.cluster().Pause(who, d)
	case verb == "sever" && coord != nil:
		coord.Sever()
	default:
		s.t.Errorf("%s: bad event %q", line, cmd)
	}
}

// model: potts HxWxL rho=R seed=S, then reduced (the model without its
// fixed variables, model.Reduce), and options: iters=N, algo=A, tol=T,
// threads=N.
func (s *scenario) model(f []string) {
	var g generate.GridOptions
	if len(f) < 2 || f[0] != "potts" {
		s.fatalf("want model potts HxWxL ...")
	}
	if _, err := fmt.Sscanf(f[1], "%dx%dx%d", &g.Height, &g.Width, &g.Labels); err != nil {
		s.fatalf("grid %q: %v", f[1], err)
	}
	s.opts = consensus.DefaultOptions()
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "rho":
			g.Rho, err = strconv.ParseFloat(v, 64)
		case "seed":
			g.Seed, err = strconv.ParseInt(v, 10, 64)
		case "iters":
			s.opts.MaxIter, err = strconv.Atoi(v)
		case "algo":
			s.opts.Algo = consensus.Algo(v)
		case "tol":
			s.opts.Tol, err = strconv.ParseFloat(v, 64)
		case "threads":
			s.opts.Threads, err = strconv.Atoi(v)
		case "reduced":
		default:
			s.fatalf("unknown model setting %s", k)
		}
		if err != nil {
			s.fatalf("%s: %v", kv, err)
		}
	}
	s.m, s.undisturbed = generate.Potts(g), nil
	if slices.Contains(f[2:], "reduced") {
		red, err := model.Reduce(s.m, nil)
		if err != nil {
			s.fatalf("reducing: %v", err)
		}
		s.m = red.Model
	}
}

// runSpec is a run command's settings (see parseRun).
type runSpec struct {
	ro           RunOptions
	fails        bool         // the run must fail
	untilSevered bool         // returns once the coordinator is cut off
	saved        *saved       // its states, with checkpoint=
	resume       *ResumePoint // with resume=
}

// parseRun reads a run command's settings: job=NAME (NAME* with
// claimfirst=W: the first NAME0, NAME1, ... whose epoch 1 asks W first
// among the workers started), or base=B (a job of epochs: the first is 1,
// one resumed runs in the epoch after the resumed run's), workers=N, the
// durations wait=, step=, lost=, spare=, resend= (RunOptions'
// WaitWorkers 10s, StepTimeout 10s, LostAfter, SpareWait, ResendEvery),
// checkpoint=N (states every N iterations, kept for resume= and expect),
// resume=latest|middle (of the states kept), until=severed (the command
// returns once an event severs the coordinator; the run ends in the
// background), and fails (the run must fail).
func (s *scenario) parseRun(f []string) runSpec {
	r := runSpec{ro: RunOptions{WaitWorkers: 10 * time.Second, StepTimeout: 10 * time.Second}}
	ro := &r.ro
	var claimFirst string
	durations := map[string]*time.Duration{"wait": &ro.WaitWorkers, "step": &ro.StepTimeout, "lost": &ro.LostAfter,
		"spare": &ro.SpareWait, "resend": &ro.ResendEvery}
	for _, kv := range f {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		if d, ok := durations[k]; ok {
			if *d, err = time.ParseDuration(v); err != nil {
				s.fatalf("%s: %v", kv, err)
			}
			continue
		}
		switch k {
		case "fails":
			r.fails = true
		case "until":
			if r.untilSevered = v == "severed"; !r.untilSevered {
				s.fatalf("until=%s: want until=severed", v)
			}
		case "job":
			ro.Base = v
		case "claimfirst":
			claimFirst = v
		case "base":
			ro.Base = v
		case "workers":
			ro.Workers, err = strconv.Atoi(v)
		case "checkpoint":
			r.saved = &saved{}
			ro.Checkpoint = &CheckpointOptions{Save: r.saved.save}
			ro.Checkpoint.Every, err = strconv.Atoi(v)
		case "resume":
			r.resume = s.resumeFrom(v)
		default:
			s.fatalf("unknown run setting %s", k)
		}
		if err != nil {
			s.fatalf("%s: %v", kv, err)
		}
	}
	if s.shard != nil && (r.resume != nil || r.untilSevered) {
		s.fatalf("a sharded run neither resumes nor runs until severed here")
	}
	if strings.HasSuffix(ro.Base, "*") {
		ro.Base = s.jobClaiming(strings.TrimSuffix(ro.Base, "*"), claimFirst)
	}
	return r
}

// run runs a job on the cluster, whole-model (RunJob) or sharded, with
// the events given for it, and waits for its end (or, until=severed, for
// its coordinator to be cut off).
func (s *scenario) run(f []string) {
	if s.m == nil {
		s.fatalf("run before model")
	}
	r := s.parseRun(f)
	events := s.events
	s.events = nil
	end := s.start(r, events)
	if r.untilSevered {
		select {
		case <-s.severed(events):
		case <-time.After(30 * time.Second):
			s.fatalf("the coordinator was never severed")
		}
	} else {
		e := <-end
		switch {
		case r.fails && e.err == nil:
			s.fatalf("the run did not fail")
		case !r.fails && e.err != nil:
			s.fatalf("%v", e.err)
		}
		for _, ev := range events {
			select {
			case <-ev.fired:
			default:
				s.fatalf("the job ended before iteration %d (%s)", ev.iter, strings.Join(ev.cmds, "; "))
			}
		}
		s.last = e.run
		if s.first == nil {
			s.first = &e.run.res
		}
	}
	if r.saved != nil {
		s.saved, s.savedEpoch = r.saved, 1 // as RunJob numbers epochs
		if r.resume != nil {
			s.savedEpoch = r.resume.Epoch + 1
		}
	}
}

// ended is how a run ended.
type ended struct {
	run scenarioRun
	err error
}

// start starts run r in the background, its events fired from its
// progress.
func (s *scenario) start(r runSpec, events []*event) <-chan ended {
	opts := s.opts
	if len(events) > 0 {
		opts.ProgressEvery = 0 // every iteration
	}
	coord := s.cluster().Coordinator("coordinator")
	progress := func(p solver.Progress) {
		for _, e := range events {
			if p.Iteration >= e.iter {
				e.once.Do(func() {
					for _, c := range e.cmds {
						s.event(e.line, c, coord)
					}
					close(e.fired)
				})
			}
		}
	}
	end := make(chan ended, 1)
	s.loads.Store(0)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		if s.shard != nil {
			run, err := s.cluster().RunSharded(ctx, s.shard, s.stateDir, opts, r.ro, progress)
			end <- ended{scenarioRun{run.Result, run.Stats, time.Since(start), run.X, run.Delivered}, err}
			return
		}
		out, err := RunJob(ctx, Job{Name: s.line, Transport: coord, Model: s.m, Options: opts, Run: r.ro, Progress: progress, Resume: r.resume})
		end <- ended{scenarioRun{res: out.Result, stats: out.Stats, took: time.Since(start)}, err}
	}()
	return end
}

// severed is closed when the event that severs the coordinator has fired.
func (s *scenario) severed(events []*event) <-chan struct{} {
	for _, e := range events {
		for _, c := range e.cmds {
			if c == "sever" {
				return e.fired
			}
		}
	}
	s.fatalf("until=severed with no event that severs")
	return nil
}

// resumeFrom picks a state the latest run that took states saved.
func (s *scenario) resumeFrom(which string) *ResumePoint {
	var st *consensus.State
	var where []int32
	if s.saved != nil {
		st, where = s.saved.last()
	}
	switch {
	case st == nil:
		s.fatalf("resume=%s: no states taken", which)
	case which == "latest":
	case which == "middle":
		s.saved.mu.Lock()
		st = s.saved.states[len(s.saved.states)/2]
		s.saved.mu.Unlock()
	default:
		s.fatalf("resume=%s: want latest or middle", which)
	}
	s.resume = st
	return &ResumePoint{State: st, Where: where, Epoch: s.savedEpoch}
}

// jobClaiming returns the first job name prefix0, prefix1, ... whose epoch
// 1 asks worker first before every other worker started.
func (s *scenario) jobClaiming(prefix, first string) string {
	if first == "" {
		s.fatalf("job=%s* without claimfirst=", prefix)
	}
	others := slices.DeleteFunc(s.cluster().Workers(), func(name string) bool { return name == first })
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		e1 := EpochJob(name, 1)
		ahead := true
		for _, o := range others {
			ahead = ahead && claimOrder(e1, first) < claimOrder(e1, o)
		}
		if ahead {
			return name
		}
	}
}

func (s *scenario) ref(name string) solver.Result {
	switch name {
	case "undisturbed":
		if s.undisturbed == nil {
			want, err := consensus.Solve(context.Background(), s.m, nil, s.opts, nil)
			if err != nil {
				s.fatalf("undisturbed: %v", err)
			}
			s.undisturbed = &want
		}
		return *s.undisturbed
	case "first":
		if s.first == nil {
			s.fatalf("no first run")
		}
		return *s.first
	}
	s.fatalf("unknown reference %s: want undisturbed or first", name)
	return solver.Result{}
}

func (s *scenario) expect(args string) {
	f := strings.Fields(args)
	got := s.last.res
	switch {
	case len(f) == 3 && slices.Contains([]string{"==", "===", "~", ">="}, f[1]):
		s.expectAgainst(f[0], f[1], f[2])
		return
	case args == "faults":
		if s.faulty == nil {
			s.fatalf("no faulty transport")
		}
		if st := s.faulty.Stats(); st.Dropped == 0 || st.Duplicated == 0 || st.Delayed == 0 {
			s.errorf("faults not exercised: %+v", st)
		}
		return
	case args == "bound":
		if got.Dual < got.Primal-1e-9*math.Abs(got.Primal) {
			s.errorf("dual %.12g < primal %.12g", got.Dual, got.Primal)
		}
		return
	case args == "assignment":
		if s.last.x == nil || s.last.delivered != s.m.NumVars() {
			s.errorf("%d states delivered for %d variables", s.last.delivered, s.m.NumVars())
		} else if sc := s.m.Score(s.last.x); !relClose(sc, got.Primal, 1e-9) {
			s.errorf("primal %.12g, the delivered assignment scores %.12g", got.Primal, sc)
		}
		return
	}
	ofRef := len(f) > 0 && (f[0] == "undisturbed" || f[0] == "first")
	if ofRef {
		got, f = s.ref(f[0]), f[1:]
	}
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if ofRef && k != "status" {
			s.fatalf("only the status of a reference is expected")
		}
		if k == "status" {
			if string(got.Status) != v {
				s.errorf("status %s", got.Status)
			}
			continue
		}
		if strings.HasPrefix(kv, "took<") {
			d, err := time.ParseDuration(kv[len("took<"):])
			if err != nil {
				s.fatalf("%v", err)
			}
			if s.last.took >= d {
				s.errorf("the job took %v", s.last.took)
			}
			continue
		}
		atLeast := strings.HasSuffix(k, ">")
		k = strings.TrimSuffix(k, ">")
		if !ok {
			s.fatalf("want KEY=VALUE, KEY>=VALUE or KEY=LOW..HIGH")
		}
		n := s.stat(k)
		lo, hi := s.bounds(v)
		if atLeast {
			hi = int(^uint(0) >> 1)
		}
		if n < lo || n > hi {
			s.errorf("%s is %d", k, n)
		}
	}
}

// expectAgainst checks the last run's result against reference ref:
// what is result (== compare, ~ closeTo) or a field (primal, dual,
// iterations; == to 1e-9, === bit for bit, >= to 1e-9 below), compared
// with the same field of ref, or another (ref.field).
func (s *scenario) expectAgainst(what, op, ref string) {
	got := s.last.res
	refName, field, _ := strings.Cut(ref, ".")
	want := s.ref(refName)
	if field == "" {
		field = what
	}
	switch {
	case what == "result" && op == "==":
		compare(s.t, got, want)
		return
	case what == "result" && op == "~":
		closeTo(s.t, s.line, got, want)
		return
	}
	g, w := s.field(got, what), s.field(want, field)
	switch {
	case op == "==" && !relClose(g, w, 1e-9), op == "===" && g != w:
		s.errorf("%s %.15g, want %.15g", what, g, w)
	case op == ">=" && g < w-1e-9:
		s.errorf("%s %.15g < %.15g", what, g, w)
	case op == "~":
		s.fatalf("~ compares results only")
	}
}

func (s *scenario) field(r solver.Result, field string) float64 {
	switch field {
	case "primal":
		return r.Primal
	case "dual":
		return r.Dual
	case "iterations":
		return float64(r.Iterations)
	}
	s.fatalf("unknown result field %s", field)
	return 0
}

// stat is one number of the last run: failovers, restored, rejoined,
// resumed and redone (RunStats); checkpoints, how many states the latest run that took
// any took, and checkpoint, the iteration of the last of them.
func (s *scenario) stat(k string) int {
	st := s.last.stats
	switch k {
	case "failovers":
		return st.Failovers
	case "restored":
		return st.Restored
	case "rejoined":
		return st.Rejoined
	case "resumed":
		return st.Resumed
	case "redone":
		return st.Redone
	case "loads":
		return int(s.loads.Load())
	case "checkpoints", "checkpoint":
		if s.saved == nil {
			s.fatalf("no states taken")
		}
		last, _ := s.saved.last()
		if k == "checkpoint" {
			if last == nil {
				return -1
			}
			return last.Iter
		}
		s.saved.mu.Lock()
		defer s.saved.mu.Unlock()
		return len(s.saved.states)
	}
	s.fatalf("unknown stat %s", k)
	return 0
}

// bounds reads N, LOW..HIGH, or resume (the iteration of the state the
// latest resumed run started from).
func (s *scenario) bounds(v string) (lo, hi int) {
	if v == "resume" {
		if s.resume == nil {
			s.fatalf("no run resumed")
		}
		return s.resume.Iter, s.resume.Iter
	}
	a, b, isRange := strings.Cut(v, "..")
	lo, err := strconv.Atoi(a)
	if err != nil {
		s.fatalf("%q: %v", v, err)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			s.fatalf("%q: %v", v, err)
		}
	}
	return lo, hi
}
