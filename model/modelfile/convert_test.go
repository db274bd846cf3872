package modelfile

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/uai"
	"github.com/vmihailenco/msgpack/v5"
)

// closeScores checks that a and b score random assignments within tol.
func closeScores(t *testing.T, a, b *model.Model, tol float64) {
	t.Helper()
	if len(a.Cards) != len(b.Cards) {
		t.Fatalf("%d variables, want %d", len(b.Cards), len(a.Cards))
	}
	r := rand.New(rand.NewSource(1))
	x := make([]int, len(a.Cards))
	for n := 0; n < 300; n++ {
		for i, c := range a.Cards {
			x[i] = r.Intn(c)
		}
		sa, sb := a.Score(x), b.Score(x)
		if sa != sb && !(math.Abs(sa-sb) <= tol*(1+math.Abs(sa))) {
			t.Fatalf("score at %v: %v, want %v", x, sb, sa)
		}
	}
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// Native: every kind, json -> ddx -> msgpack -> ddx -> json.
	m := generate.Logic(generate.LogicOptions{Vars: 15, Factors: 12, Couplings: 10, MaxArity: 4, Rho: 1, Seed: 5})
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.Dense, Vars: []int{0, 1}, Table: []float64{0, 1, math.Inf(-1), 2}},
		model.Factor{Kind: model.Sequence, Vars: []int{2, 3, 4}, Table: []float64{1, 2, 3, 4}}.WithEmission([]float64{1, 0, 0, 1, 1, 0}))
	chain := []string{"m.json", "a.ddx", "m.msgpack", "b.ddx", "back.json"}
	if err := Save(filepath.Join(dir, chain[0]), m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(chain); i++ {
		if err := Convert(ctx, filepath.Join(dir, chain[i]), filepath.Join(dir, chain[i+1]), ConvertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range chain {
		got, err := Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		closeScores(t, m, got, 0)
	}
	// UAI: uai -> ddx (streaming) -> uai.gz; the ddx holds exactly what the
	// UAI reader reads.
	p := generate.Potts(generate.GridOptions{Height: 6, Width: 7, Labels: 3, Rho: 1, Seed: 2})
	in := filepath.Join(dir, "p.uai")
	if err := uai.WriteFile(in, p); err != nil {
		t.Fatal(err)
	}
	want, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	var calls, last int
	err = Convert(ctx, in, filepath.Join(dir, "p.ddx"), ConvertOptions{BlockSize: 512, KeepUnaryFactors: true, Progress: func(done, total int) { calls, last = calls+1, total }})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(want.Factors) || last != len(want.Factors) {
		t.Fatalf("progress: %d calls, total %d; want %d", calls, last, len(want.Factors))
	}
	got, err := Load(filepath.Join(dir, "p.ddx"))
	if err != nil {
		t.Fatal(err)
	}
	closeScores(t, want, got, 0)
	// By default the UAI file's unary tables are folded into the unaries:
	// the same scores (up to rounding), no factor over fewer than 2
	// variables.
	if err := Convert(ctx, in, filepath.Join(dir, "folded.ddx"), ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	folded, err := Load(filepath.Join(dir, "folded.ddx"))
	if err != nil {
		t.Fatal(err)
	}
	closeScores(t, want, folded, 1e-12)
	if len(folded.Factors) != len(p.Factors) {
		t.Fatalf("folded: %d factors, want the grid's %d", len(folded.Factors), len(p.Factors))
	}
	for a, f := range folded.Factors {
		if len(f.Vars) < 2 {
			t.Fatalf("folded: factor %d over %d variables", a, len(f.Vars))
		}
	}
	if err := Convert(ctx, filepath.Join(dir, "p.ddx"), filepath.Join(dir, "q.uai.gz"), ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(filepath.Join(dir, "q.uai.gz"))
	if err != nil {
		t.Fatal(err)
	}
	closeScores(t, p, back, 1e-9)
	// A bad input leaves no output.
	os.WriteFile(filepath.Join(dir, "bad.uai"), []byte("MARKOV 2 2 2 1 2 0 1 4 1 1 1"), 0o644)
	if err := Convert(ctx, filepath.Join(dir, "bad.uai"), filepath.Join(dir, "bad.ddx"), ConvertOptions{}); err == nil {
		t.Fatal("truncated UAI: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.ddx")); !os.IsNotExist(err) {
		t.Fatalf("bad.ddx left behind: %v", err)
	}
	// Nor does a cancelled conversion; and no temporary file is left.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := Convert(cancelled, in, filepath.Join(dir, "c.ddx"), ConvertOptions{}); err == nil {
		t.Fatal("cancelled: no error")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "c.ddx" || strings.HasPrefix(e.Name(), ".ddx-") {
			t.Fatalf("%s left behind", e.Name())
		}
	}
}

// peakHeap runs f while sampling the heap every millisecond and returns
// the largest HeapAlloc seen above the heap before f. The collector runs at
// GOGC=10 meanwhile, so that HeapAlloc (which counts garbage not yet
// collected) stays near the live heap.
func peakHeap(f func()) (peak, before uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before = ms.HeapAlloc
	var top atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > top.Load() {
				top.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return top.Load() - min(top.Load(), before), before
}

// TestConvertBoundedMemory converts a Potts grid written as UAI (dense
// tables of 32x32 entries) to the indexed format and checks that the live
// heap stays well below the tables' size, where reading the UAI file whole
// holds them all. DDRUN_CONVERT_GRID=N sets the grid's side (default 70).
func TestConvertBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large UAI file")
	}
	const labels = 32
	side := 70
	if s := os.Getenv("DDRUN_CONVERT_GRID"); s != "" {
		if _, err := fmt.Sscan(s, &side); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "g.uai"), filepath.Join(dir, "g.ddx")
	p := generate.Potts(generate.GridOptions{Height: side, Width: side, Labels: labels, Rho: 1, Seed: 1})
	if err := uai.WriteFile(in, p); err != nil {
		t.Fatal(err)
	}
	edges := len(p.Factors)
	p = nil
	tables := uint64(edges) * labels * labels * 8
	start := time.Now()
	var err error
	peak, before := peakHeap(func() { err = Convert(context.Background(), in, out, ConvertOptions{}) })
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	readPeak, _ := peakHeap(func() {
		_, err = Load(in)
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(in)
	fo, _ := os.Stat(out)
	t.Logf("%dx%d Potts, %d labels: %d factors, tables %.1f MB; UAI %.1f MB -> ddx %.1f MB in %v; peak live heap above the %.1f MB before: convert %.1f MB, whole read %.1f MB",
		side, side, labels, edges, mb(tables), mb(uint64(fi.Size())), mb(uint64(fo.Size())), took.Round(time.Millisecond), mb(before), mb(peak), mb(readPeak))
	if peak > tables/4 {
		t.Fatalf("convert's live heap grew by %.1f MB, more than a quarter of the tables' %.1f MB", mb(peak), mb(tables))
	}
}

func mb(b uint64) float64 { return float64(b) / 1e6 }

// TestConvertMsgpackStreams: a msgpack model (plain and gzip) converts
// to the very bytes of the .ddx written from the whole model, and a
// truncated file fails with the output removed.
func TestConvertMsgpackStreams(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := generate.Logic(generate.LogicOptions{Vars: 15, Factors: 12, Couplings: 10, MaxArity: 4, Rho: 1, Seed: 5})
	m.Factors = append(m.Factors,
		model.Factor{Kind: model.Dense, Vars: []int{7}, Table: []float64{0.5, -1}}, // folded into the unaries
		model.Factor{Kind: model.Sequence, Vars: []int{2, 3, 4}, Table: []float64{1, 2, 3, 4}}.WithEmission([]float64{1, 0, 0, 1, 1, 0}))
	m.Constant = 1.25
	want := filepath.Join(dir, "whole.ddx")
	f, err := os.Create(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := indexed.Write(f, m, indexed.WriteOptions{FoldUnary: true}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wantBytes, _ := os.ReadFile(want)
	for _, name := range []string{"m.msgpack", "m.mp.gz"} {
		in, out := filepath.Join(dir, name), filepath.Join(dir, name+".ddx")
		if err := Save(in, m); err != nil {
			t.Fatal(err)
		}
		var last int
		if err := Convert(ctx, in, out, ConvertOptions{Progress: func(done, total int) { last = total }}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(out)
		if string(got) != string(wantBytes) {
			t.Fatalf("%s: the streamed .ddx differs from the whole model's", name)
		}
		if last != len(m.Factors) {
			t.Fatalf("%s: progress total %d, want %d", name, last, len(m.Factors))
		}
		back, err := Load(out)
		if err != nil {
			t.Fatal(err)
		}
		closeScores(t, m, back, 1e-12)
	}
	// Truncated: an error naming the file, no output.
	data, _ := os.ReadFile(filepath.Join(dir, "m.msgpack"))
	bad := filepath.Join(dir, "bad.msgpack")
	os.WriteFile(bad, data[:len(data)-5], 0o644)
	err = Convert(ctx, bad, filepath.Join(dir, "bad.ddx"), ConvertOptions{})
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("truncated file: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "bad.ddx")); serr == nil {
		t.Fatal("a failed conversion left its output")
	}
}

// TestConvertXZStreams: an xz-compressed UAI file and an xz-compressed
// msgpack file convert to the very .ddx of their plain files.
func TestConvertXZStreams(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := generate.Potts(generate.GridOptions{Height: 5, Width: 6, Labels: 3, Rho: 1, Seed: 7})
	for _, name := range []string{"g.uai", "g.msgpack"} {
		plain := filepath.Join(dir, name)
		if err := Save(plain, m); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(plain)
		xzPath := writeXZ(t, dir, name+".xz", string(data))
		for _, in := range []string{plain, xzPath} {
			if err := Convert(ctx, in, in+".ddx", ConvertOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		a, _ := os.ReadFile(plain + ".ddx")
		b, _ := os.ReadFile(xzPath + ".ddx")
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: the .xz converts to other bytes than the plain file", name)
		}
	}
}

// TestConvertBudgetEachPiece: a streaming conversion to .ddx (UAI plain
// and xz, msgpack plain and gzip) holds one table at a time, so
// MaxEntries bounds each piece, not the totals: a 3x3 4-label grid with
// dense pair tables (9 variables, 36 states, 192 table entries) converts
// under a budget of 20 to the .ddx of its unbounded conversion, where the
// conversions that read the model whole (JSON input, a UAI output) refuse
// it; a table over the budget is a one-line error naming the file, with
// no output and no temporary file left behind.
func TestConvertBudgetEachPiece(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := generate.Potts(generate.GridOptions{Height: 3, Width: 3, Labels: 4, Rho: 1, Seed: 3, Pair: generate.PairDense})
	var inputs []string
	for _, name := range []string{"g.uai", "g.msgpack", "g.msgpack.gz"} {
		p := filepath.Join(dir, name)
		if err := Save(p, m); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
		if name == "g.uai" {
			data, _ := os.ReadFile(p)
			inputs = append(inputs, writeXZ(t, dir, "g.uai.xz", string(data)))
		}
	}
	for _, in := range inputs {
		want, got := in+".want.ddx", in+".ddx"
		if err := Convert(ctx, in, want, ConvertOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := Convert(ctx, in, got, ConvertOptions{MaxEntries: 20}); err != nil {
			t.Fatalf("%s: every piece within the budget of 20: %v", in, err)
		}
		a, _ := os.ReadFile(want)
		b, _ := os.ReadFile(got)
		if len(a) == 0 || string(a) != string(b) {
			t.Fatalf("%s: the budgeted conversion differs from the unbounded one", in)
		}
		bad := in + ".bad.ddx"
		err := Convert(ctx, in, bad, ConvertOptions{MaxEntries: 10})
		if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "16 entries") || !strings.Contains(err.Error(), "limit of 10") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: a table of 16 entries over a budget of 10: %v", in, err)
		}
		if _, serr := os.Stat(bad); serr == nil {
			t.Fatalf("%s: a failed conversion left its output", in)
		}
	}
	js := filepath.Join(dir, "g.json")
	if err := Save(js, m); err != nil {
		t.Fatal(err)
	}
	for in, out := range map[string]string{js: js + ".ddx", inputs[0]: filepath.Join(dir, "back.uai")} {
		err := Convert(ctx, in, out, ConvertOptions{MaxEntries: 20})
		if err == nil || !strings.Contains(err.Error(), "over the limit of 20") {
			t.Fatalf("%s to %s reads the model whole: %v, want the totals over the limit of 20", in, out, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestConvertStreamsBadInput: with the totals unchecked, a streaming
// conversion to .ddx still refuses bad input with one line naming the
// file, the place and the problem (a huge domain, NaN, a file cut short),
// and leaves neither the output nor a temporary file behind.
func TestConvertStreamsBadInput(t *testing.T) {
	dir := t.TempDir()
	mp := func(cards []int64, table []float64) string {
		b, err := msgpack.Marshal(map[string]any{"format": "ddrun-model", "version": 1, "cards": cards,
			"factors": []any{map[string]any{"kind": "dense", "vars": []int{0, 1}, "table": table}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := mp([]int64{2, 2}, []float64{0, 1, 2, 3})
	cases := []struct{ name, data, want string }{
		{"huge.uai", "MARKOV\n2\n2 4294967296\n1\n2 0 1\n", ":3: variable 1: cardinality 4294967296 is over the limit of 1000"},
		{"nan.uai", "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 NaN 1 1\n", `:7: table of factor 0 entry 1: "NaN" is not a number (NaN)`},
		{"cut.uai", "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2", ":7: unexpected end of file: expected entry 2 of the table of factor 0"},
		{"huge.msgpack", mp([]int64{2, 1 << 40}, []float64{0, 1, 2, 3}), "cards[1]: cardinality 1099511627776 is over the limit of 1000"},
		{"nan.msgpack", mp([]int64{2, 2}, []float64{0, math.NaN(), 2, 3}), "factors[0].table[1]: NaN is not allowed"},
		{"cut.msgpack", good[:len(good)-3], "unexpected end of input"},
	}
	for _, c := range cases {
		in, out := filepath.Join(dir, c.name), filepath.Join(dir, c.name+".ddx")
		if err := os.WriteFile(in, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Convert(context.Background(), in, out, ConvertOptions{MaxEntries: 1000})
		if err == nil || !strings.HasPrefix(err.Error(), in) || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("%s: %v, want one line naming the file and %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: a failed conversion left its output", c.name)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestUAIOpenerHasSize: the conversion's UAI reader knows how many bytes
// are left, as solve's does (teeFile's Len), so that the UAI reader sizes
// the cardinalities' slices once instead of growing them by appends; an
// xz file's size is not known.
func TestUAIOpenerHasSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.uai")
	text := "MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 2 3 4\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		r, err := uaiOpener(ctx, path)()
		if err != nil {
			t.Fatal(err)
		}
		l, ok := r.(interface{ Len() int })
		if !ok || l.Len() != len(text) {
			t.Fatalf("reader %T: no Len, or not %d", r, len(text))
		}
		b := make([]byte, 7)
		if n, err := io.ReadFull(r, b); err != nil || n != 7 || l.Len() != len(text)-7 {
			t.Fatalf("after 7 bytes (%v, %v): Len %d, want %d", n, err, l.Len(), len(text)-7)
		}
		r.Close()
	}
	if _, err := uaiOpener(context.Background(), filepath.Join(dir, "none.uai"))(); err == nil {
		t.Fatal("no error opening a missing file")
	}
}
