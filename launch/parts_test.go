package launch

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// hiding is the coordinator's transport in the tests of received parts:
// once the coordinator serves the parts' blocks (it subscribes to their
// requests, with the file open), the model file disappears from its path,
// so that no worker can read it there; garble, when set, changes every
// message the coordinator sends on a parts' subject.
type hiding struct {
	transport.Transport
	path   string
	garble func(data []byte) []byte
}

func (h *hiding) Subscribe(subject string, fn transport.Handler) (transport.Subscription, error) {
	if strings.HasPrefix(subject, "ddrun.parts.") {
		if err := os.Rename(h.path, h.path+".hidden"); err != nil {
			return nil, err
		}
	}
	return h.Transport.Subscribe(subject, fn)
}

func (h *hiding) Publish(ctx context.Context, subject string, data []byte) error {
	if h.garble != nil && strings.HasPrefix(subject, "ddrun.parts.") && strings.Contains(subject, ".to.") {
		data = h.garble(data)
	}
	return h.Transport.Publish(ctx, subject, data)
}

// lines is a log that keeps its messages.
type lines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// smallBlocks has the files hashed in the smallest blocks, so that the
// parts' files take many.
func smallBlocks(t *testing.T) {
	partsBlockSize = shard.MinBlockSize
	t.Cleanup(func() { partsBlockSize = shard.ShipBlockSize })
}

// ownDirs serves n workers on tr, each with a state directory of its own
// (returned) and the model roots given, logging to log, until the test
// ends.
func ownDirs(t *testing.T, tr transport.Transport, n int, log *lines, roots ...string) []string {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	dirs := make([]string, n)
	for i := range n {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			w := Worker{Name: fmt.Sprintf("own%d", i), Threads: 1, StateDir: dirs[i], ModelRoots: roots, Logger: slog.New(log)}
			if err := ServeWorker(ctx, tr, w); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		})
	}
	return dirs
}

// partsSetup writes m to dir/m.ddx and serves two workers with state
// directories of their own, which may read models under dir, on an
// in-process transport.
func partsSetup(t *testing.T, dir string, m *model.Model) (path string, tr transport.Transport, dirs []string, log *lines) {
	t.Helper()
	path = writeDDX(t, dir, m)
	log = &lines{}
	tr = transport.NewInProc()
	t.Cleanup(func() { tr.Close() })
	return path, tr, ownDirs(t, tr, 2, log, dir), log
}

// writeDDX writes m to dir/m.ddx and returns that path.
func writeDDX(tb testing.TB, dir string, m *model.Model) string {
	tb.Helper()
	path := filepath.Join(dir, "m.ddx")
	if err := indexed.WriteFile(path, m); err != nil {
		tb.Fatal(err)
	}
	return path
}

// emptyDirs fails the test when a directory holds a file.
func emptyDirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if es, err := os.ReadDir(d); err != nil || len(es) != 0 {
			t.Errorf("%s holds %d entries (%v), want none", d, len(es), err)
		}
	}
}

// TestPartsReceived: workers that cannot read the coordinator's model file
// (it leaves its path once the coordinator serves it) receive their parts'
// blocks into their own state directories and run as workers that read
// the file do, DD and distributed TRW-S alike: the same iterations, dual
// and primal, to the bit; the blocks' files are gone once the parts are
// loaded.
func TestPartsReceived(t *testing.T) {
	smallBlocks(t)
	m := generate.Potts(generate.GridOptions{Height: 30, Width: 31, Labels: 3, Rho: 0.7, Seed: 5})
	for _, algo := range []string{"admm", "trws"} {
		t.Run(algo, func(t *testing.T) {
			dir := t.TempDir()
			path, tr, dirs, log := partsSetup(t, dir, m)
			run := func(mode Parts, ctr transport.Transport) Outcome {
				t.Helper()
				j := distributedJob(t, "algo", algo, "max-iter", "20", "tol", "0")
				target := Target{Workers: 2, Transport: ctr, Job: "parts" + string(mode), Sharded: &Sharded{Path: path, StateDir: dir, Parts: mode}, Assignment: true}
				o, err := Run(context.Background(), j, target, Hooks{})
				if err != nil {
					t.Fatalf("--parts %s: %v", mode, err)
				}
				return o
			}
			want := run(PartsFile, tr)
			if n := log.count("part received from the coordinator"); n != 0 {
				t.Fatalf("--parts file: %d parts received", n)
			}
			for _, mode := range []Parts{PartsAuto, PartsNATS} {
				got := run(mode, &hiding{Transport: tr, path: path})
				if err := os.Rename(path+".hidden", path); err != nil {
					t.Fatal(err)
				}
				if n := log.count("part received from the coordinator"); n != 2 {
					t.Fatalf("--parts %s: %d parts received in all, want 2", mode, n)
				}
				log.msgs = nil
				a, b := want.Report, got.Report
				if a.Algo != algo || b.Algo != algo || a.Iterations != b.Iterations || *a.Dual != *b.Dual || *a.Primal != *b.Primal {
					t.Errorf("--parts %s: %s, %d iterations, dual %v, primal %v; from the file: %s, %d, %v, %v", mode,
						b.Algo, b.Iterations, *b.Dual, *b.Primal, a.Algo, a.Iterations, *a.Dual, *a.Primal)
				}
				if sc := m.Score(b.Assignment); math.Abs(sc-*b.Primal) > 1e-9*math.Abs(sc) {
					t.Errorf("--parts %s: primal %v, the assignment scores %v", mode, *b.Primal, sc)
				}
				emptyDirs(t, dirs...)
			}
		})
	}
}

// TestPartsForged: a block or a page of block hashes changed on its way
// (forged or garbled) fails the worker's load with an error that says
// so, and the run with it; no file is left in the worker's directory nor
// created anywhere else.
func TestPartsForged(t *testing.T) {
	smallBlocks(t)
	m := generate.Potts(generate.GridOptions{Height: 20, Width: 21, Labels: 3, Rho: 0.7, Seed: 6})
	for _, c := range []struct {
		name   string
		garble func([]byte) []byte
		want   string
	}{
		{"block", func(data []byte) []byte {
			if len(data) < 1000 { // a page of hashes, not a block
				return data
			}
			data = append([]byte(nil), data...)
			data[len(data)-7] ^= 1
			return data
		}, "is not the one the coordinator announced (forged or garbled)"},
		{"hashes", func(data []byte) []byte {
			if len(data) >= 1000 {
				return data
			}
			data = append([]byte(nil), data...)
			data[len(data)-3] ^= 0x40
			return data
		}, "do not match the digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			dir := filepath.Join(top, "coordinator")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path, tr, dirs, _ := partsSetup(t, dir, m)
			j := distributedJob(t, "algo", "admm", "max-iter", "5", "tol", "0")
			target := Target{Workers: 2, Transport: &hiding{Transport: tr, path: path, garble: c.garble}, Job: "forged",
				Sharded: &Sharded{Path: path, StateDir: dir, Parts: PartsNATS}, Wait: 5e9, LostAfter: 1e9, SpareWait: 1e9}
			_, err := Run(context.Background(), j, target, Hooks{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run: %v, want an error saying %q", err, c.want)
			}
			emptyDirs(t, dirs...)
			es, err := os.ReadDir(top)
			if err != nil || len(es) != 1 {
				t.Errorf("%s holds %d entries, want the coordinator's directory only", top, len(es))
			}
		})
	}
}

// FuzzPartsMessages: the parts' protocol takes any bytes from the
// network. A request makes the coordinator send only true blocks of its
// file and pages of its hashes (or nothing), a reply is taken or dropped,
// and nothing panics.
func FuzzPartsMessages(f *testing.F) {
	m := generate.Potts(generate.GridOptions{Height: 10, Width: 10, Labels: 3, Rho: 1, Seed: 1})
	path := writeDDX(f, f.TempDir(), m)
	file, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		f.Fatal(err)
	}
	b, err := shard.HashBlocks(context.Background(), file, fi.Size(), shard.MinBlockSize)
	if err != nil {
		f.Fatal(err)
	}
	for _, g := range []partsGet{{To: "w0", Nonce: "0123456789abcdef", Blocks: []uint32{0, 2}}, {To: "w1", Nonce: "0123456789abcdef", Sums: true}} {
		data, err := transport.Encode(transport.Header{Kind: kindPartsGet, From: g.To}, g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for k, body := range []any{partsBlock{K: 1, Data: []byte("abc")}, partsSums{Page: 0, Sums: b.Sums}} {
		data, err := transport.Encode(transport.Header{Kind: kindPartsBlock - transport.Kind(k)}, body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	tr := transport.NewInProc()
	defer tr.Close()
	var mu sync.Mutex
	var sent [][]byte
	if _, err := tr.Subscribe("ddrun.parts.>", func(_ string, data []byte) {
		mu.Lock()
		sent = append(sent, append([]byte(nil), data...))
		mu.Unlock()
	}); err != nil {
		f.Fatal(err)
	}
	ps := &partServer{ctx: context.Background(), tr: tr, f: file, b: b, buf: make([]byte, b.BlockSize), log: slog.New(slog.DiscardHandler)}
	c := &partsClient{in: make(chan partsReply, 1), done: make(chan struct{})}
	close(c.done) // a reply taken is not waited for
	f.Fuzz(func(t *testing.T, data []byte) {
		mu.Lock()
		sent = sent[:0]
		mu.Unlock()
		ps.onGet("", data)
		c.onReply("", data)
		mu.Lock()
		defer mu.Unlock()
		for _, msg := range sent {
			h, raw, err := transport.Decode(msg)
			if err != nil {
				t.Fatalf("the coordinator sent a malformed message: %v", err)
			}
			switch h.Kind {
			case kindPartsBlock:
				var blk partsBlock
				if err := transport.DecodeBody(raw, &blk); err != nil {
					t.Fatal(err)
				}
				off, n := b.Block(blk.K)
				want := make([]byte, n)
				if _, err := file.ReadAt(want, off); err != nil || string(want) != string(blk.Data) {
					t.Fatalf("block %d sent is not the file's (%v)", blk.K, err)
				}
			case kindPartsSums:
				var s partsSums
				if err := transport.DecodeBody(raw, &s); err != nil || s.Page != 0 || string(s.Sums) != string(b.Sums) {
					t.Fatalf("page %d of hashes sent is not the file's (%v)", s.Page, err)
				}
			default:
				t.Fatalf("the coordinator sent a %v", h.Kind)
			}
		}
	})
}

// BenchmarkPartsReceive: one worker's half of a 300x300 grid, read from
// the file (file) or received from a coordinator on an in-process
// transport through the parts' protocol (received): the cost of the
// requests, the hashes and the blocks' file.
func BenchmarkPartsReceive(b *testing.B) {
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 0.5, Seed: 1})
	path := writeDDX(b, b.TempDir(), m)
	l, err := shard.PlanLayout(path, 2, shard.PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p := &shardPlan{layout: l}
	if err := p.hashParts(context.Background(), PartsNATS, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	defer p.release()
	tr := transport.NewInProc()
	defer tr.Close()
	stop, err := p.serveParts(context.Background(), tr, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	wire, err := l.Specs[0].Encode()
	if err != nil {
		b.Fatal(err)
	}
	dirs, err := shard.NewDirs(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	r := &partReceiver{tr: tr, name: "w0", dirs: dirs, log: slog.New(slog.DiscardHandler)}
	for _, received := range []bool{false, true} {
		b.Run(map[bool]string{false: "file", true: "received"}[received], func(b *testing.B) {
			for b.Loop() {
				spec, err := shard.DecodeSpec(wire)
				if err != nil {
					b.Fatal(err)
				}
				done := func() {}
				if received {
					if done, err = r.receive(context.Background(), spec); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := shard.LoadFlat(context.Background(), spec); err != nil {
					b.Fatal(err)
				}
				done()
			}
		})
	}
}

// The default state directory sits in a directory others may write to: a
// worker takes it only as its user's private directory, and refuses one
// that is a link, or open to others (made first by someone else).
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	if err := privateDir(fresh); err != nil {
		t.Fatalf("a fresh directory: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("a fresh directory: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	if err := privateDir(fresh); err != nil {
		t.Errorf("the same directory again: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{open, link} {
		if err := privateDir(d); err == nil || !strings.Contains(err.Error(), "not this user's private directory") {
			t.Errorf("%s: %v, want a refusal", filepath.Base(d), err)
		}
	}
}
