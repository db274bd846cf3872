package modelfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/native"
)

// withProcs runs fn with GOMAXPROCS at n: 1 converts msgpack sequentially,
// more pipelined (native.ReadOptions.Pipeline).
func withProcs(n int, fn func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	fn()
}

// convertOn converts in to .ddx with GOMAXPROCS at procs and returns the
// output (nil where the conversion failed) and the error, checking that no
// goroutine outlives it and that a failure leaves no output.
func convertOn(t *testing.T, ctx context.Context, in string, o ConvertOptions, procs int) ([]byte, error) {
	t.Helper()
	path := fmt.Sprintf("%s.%d.ddx", in, procs)
	before := runtime.NumGoroutine()
	var err error
	withProcs(procs, func() { err = Convert(ctx, in, path, o) })
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%s on %d cores: %d goroutines after, %d before", in, procs, n, before)
	}
	data, rerr := os.ReadFile(path)
	if err != nil {
		if rerr == nil {
			t.Fatalf("%s on %d cores: failed (%v) and left its output", in, procs, err)
		}
		return nil, err
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	os.Remove(path)
	return data, nil
}

// convertBoth converts in to .ddx sequentially (one core) and pipelined
// (two), as convertOn.
func convertBoth(t *testing.T, ctx context.Context, in string, o ConvertOptions) (seq, pipe []byte, serr, perr error) {
	t.Helper()
	seq, serr = convertOn(t, ctx, in, o, 1)
	pipe, perr = convertOn(t, ctx, in, o, 2)
	return seq, pipe, serr, perr
}

// pipeModels are models of every kind of the native format, some over
// many of the pipeline's batches (several thousand factors), one with a
// table larger than a batch.
func pipeModels(t *testing.T) map[string]*model.Model {
	every, err := native.Read(strings.NewReader(everyKind), "everyKind", native.JSON)
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]*model.Model{"every": every,
		"logic": generate.Logic(generate.LogicOptions{Vars: 2000, Factors: 5000, Couplings: 3000, MaxArity: 4, Rho: 1, Seed: 5})}
	for k, p := range map[string]generate.PairTerm{"potts": generate.PairPotts, "linear": generate.PairLinear, "quad": generate.PairQuad, "dense": generate.PairDense} {
		ms[k] = generate.Potts(generate.GridOptions{Height: 60, Width: 70, Labels: 3, Rho: 1, Seed: 9, Pair: p, Trunc: 2})
	}
	big := generate.Potts(generate.GridOptions{Height: 4, Width: 4, Labels: 70, Rho: 1, Seed: 2})
	table := make([]float64, 70*70*70) // 2.7 MB
	for i := range table {
		table[i] = float64(i%97) / 8
	}
	big.Factors = append(big.Factors, model.Factor{Kind: model.Dense, Vars: []int{0, 5, 10}, Table: table},
		model.Factor{Kind: model.Dense, Vars: []int{3}, Table: table[:70]})
	ms["big"] = big
	return ms
}

// TestConvertMsgpackPipelined: on two cores a msgpack file converts to
// the very bytes of the .ddx the sequential conversion writes, for models
// of every kind, plain and gzip, the unary factors folded or kept.
func TestConvertMsgpackPipelined(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for name, m := range pipeModels(t) {
		for _, ext := range []string{".msgpack", ".mp.gz"} {
			in := filepath.Join(dir, name+ext)
			if err := Save(in, m); err != nil {
				t.Fatal(err)
			}
			for _, keep := range []bool{false, true} {
				seq, pipe, serr, perr := convertBoth(t, ctx, in, ConvertOptions{KeepUnaryFactors: keep})
				if serr != nil || perr != nil {
					t.Fatalf("%s: %v, pipelined %v", in, serr, perr)
				}
				if len(seq) == 0 || !bytes.Equal(seq, pipe) {
					t.Fatalf("%s (unary factors kept %v): the pipelined .ddx differs (%d bytes, sequential %d)", in, keep, len(pipe), len(seq))
				}
			}
		}
	}
}

// TestConvertMsgpackPipelinedErrors: truncated and corrupted files fail
// on two cores with the sequential conversion's error and leave no output,
// also, on a small grid, under a budget that refuses its first pairwise
// table (9 entries over 8), which comes before most corrupted bytes.
// (native's TestPipelineSinkErrorWins makes the sink, here the writer,
// fail before a decode error further on.)
func TestConvertMsgpackPipelinedErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct {
		h, w int
		o    ConvertOptions
	}{{30, 40, ConvertOptions{}}, {2, 3, ConvertOptions{MaxEntries: 8}}} {
		m := generate.Potts(generate.GridOptions{Height: c.h, Width: c.w, Labels: 3, Rho: 1, Seed: 4, Pair: generate.PairDense})
		good := filepath.Join(dir, "g.msgpack")
		if err := Save(good, m); err != nil {
			t.Fatal(err)
		}
		_, _, serr, _ := convertBoth(t, ctx, good, c.o)
		if budget := c.o.MaxEntries > 0; budget != (serr != nil) || budget && !strings.Contains(serr.Error(), "over the limit of 8") {
			t.Fatalf("%dx%d, %+v: the intact file: %v", c.h, c.w, c.o, serr)
		}
		data, _ := os.ReadFile(good)
		rng := rand.New(rand.NewPCG(5, 6))
		var cases [][]byte
		for n := 0; n < len(data); n += 1 + len(data)/40 {
			cases = append(cases, data[:n])
		}
		truncated := len(cases)
		for range 60 {
			bad := bytes.Clone(data)
			bad[rng.IntN(len(bad))] = byte(rng.IntN(256))
			cases = append(cases, bad)
		}
		cases = append(cases, append(bytes.Clone(data), 0xc0))
		failed := 0
		for k, d := range cases {
			in := filepath.Join(dir, fmt.Sprintf("bad%d.msgpack", k))
			if err := os.WriteFile(in, d, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, serr, perr := convertBoth(t, ctx, in, c.o)
			if fmt.Sprint(serr) != fmt.Sprint(perr) {
				t.Fatalf("%dx%d case %d, %+v: pipelined %v, sequential %v", c.h, c.w, k, c.o, perr, serr)
			}
			if serr != nil {
				failed++
			}
		}
		if failed < truncated {
			t.Fatalf("%dx%d: only %d of %d files failed (%d truncated): the cases test little", c.h, c.w, failed, len(cases), truncated)
		}
	}
}

// TestConvertMsgpackPipelinedCancel: a conversion whose context ends
// mid-way (from its progress, on the writer's side) stops with "reading
// stopped" and the context's cause, on two cores as on one, well before
// the end, leaving no output and no goroutine.
func TestConvertMsgpackPipelinedCancel(t *testing.T) {
	dir := t.TempDir()
	m := generate.Potts(generate.GridOptions{Height: 150, Width: 150, Labels: 3, Rho: 1, Seed: 4})
	in := filepath.Join(dir, "g.msgpack")
	if err := Save(in, m); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2} {
		ctx, cancel := context.WithCancelCause(context.Background())
		last := 0
		o := ConvertOptions{Progress: func(done, total int) {
			last = done
			if done == 2000 {
				cancel(errors.New("stop here"))
			}
		}}
		_, err := convertOn(t, ctx, in, o, procs)
		if err == nil || !strings.Contains(err.Error(), "reading stopped: stop here") {
			t.Fatalf("cancelled on %d cores: %v", procs, err)
		}
		if last >= len(m.Factors) {
			t.Fatalf("cancelled on %d cores: all %d factors written", procs, last)
		}
		cancel(nil)
	}
}

// BenchmarkConvertMsgpack converts a 300x300 4-label Potts grid (179,400
// factors, 9 MB) from msgpack to .ddx on one core (sequential) and on two
// (the decoding pipelined ahead of the writer).
func BenchmarkConvertMsgpack(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "g.msgpack")
	m := generate.Potts(generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 1, Seed: 1})
	if err := Save(in, m); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(in)
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			withProcs(procs, func() {
				for b.Loop() {
					if err := Convert(context.Background(), in, filepath.Join(dir, "g.ddx"), ConvertOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
