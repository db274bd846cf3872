package native

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/model"
)

// callLog is what a sink was given, call by call, in bytes.
type callLog struct {
	b     []byte
	calls int
	// failAt, when > 0, makes the failAt-th call (from 1) fail with
	// errSinkFailed; onCall, when not nil, runs before every call.
	failAt int
	onCall func(calls int)
}

var errSinkFailed = errors.New("the sink failed")

func (l *callLog) put(tag byte, xs ...uint64) {
	l.b = append(l.b, tag)
	for _, x := range xs {
		l.b = binary.LittleEndian.AppendUint64(l.b, x)
	}
}

func (l *callLog) floats(tag byte, v []float64) {
	if v == nil {
		l.put(tag + 1)
		return
	}
	l.put(tag, uint64(len(v)))
	for _, x := range v {
		l.put(tag, math.Float64bits(x))
	}
}

// call counts a call and says whether it fails.
func (l *callLog) call() error {
	l.calls++
	if l.onCall != nil {
		l.onCall(l.calls)
	}
	if l.calls == l.failAt {
		return fmt.Errorf("call %d: %w", l.calls, errSinkFailed)
	}
	return nil
}

func (l *callLog) sink() Sink {
	return Sink{
		Begin: func(c float64, n int) error {
			l.put('B', math.Float64bits(c), uint64(n))
			return l.call()
		},
		Factors: func(n int) { l.put('N', uint64(n)) },
		Var: func(i, card int, u []float64) error {
			l.put('V', uint64(i), uint64(card))
			l.floats('u', u)
			return l.call()
		},
		Factor: func(a int, f *model.Factor) error {
			l.put('F', uint64(a), uint64(f.Kind), math.Float64bits(f.Weight), math.Float64bits(f.Trunc), uint64(f.BudgetBound()))
			l.put('s', uint64(len(f.Vars)))
			for _, v := range f.Vars {
				l.put('s', uint64(v))
			}
			l.floats('t', f.Table)
			l.floats('e', f.EmissionScores())
			if neg := f.NegatedInputs(); neg != nil {
				for _, x := range neg {
					l.b = append(l.b, 'n', byte(len(neg)), map[bool]byte{false: 0, true: 1}[x])
				}
			}
			// Trash what the sink was lent: the next factor must not see it.
			for k := range f.Vars {
				f.Vars[k] = -1
			}
			for k := range f.Table {
				f.Table[k] = math.NaN()
			}
			return l.call()
		},
	}
}

// readLog reads data with ReadMsgpackStream into a log, pipelined or not.
func readLog(t testing.TB, data []byte, opts ReadOptions, pipe bool, l *callLog) error {
	t.Helper()
	before := runtime.NumGoroutine()
	opts.Pipeline = pipe
	err := ReadMsgpackStream(bytesOpener(data), "m.msgpack", opts, l.sink())
	checkNoLeak(t, before)
	return err
}

// checkNoLeak fails when more goroutines run than before (a pipelined read
// waits for its decoder before it returns: none may be left).
func checkNoLeak(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after the read, %d before", n, before)
	}
}

// samePiped reads data sequentially, each factor framed then decoded
// (decodeInPlace off), and fails unless the sequential read decoding in
// place and the pipelined read give the sink the same calls and fail with
// the same error text (both wrapping errSinkFailed or neither).
func samePiped(t testing.TB, what string, data []byte, opts ReadOptions, failAt int) error {
	t.Helper()
	seq := &callLog{failAt: failAt}
	decodeInPlace = false
	serr := readLog(t, data, opts, false, seq)
	decodeInPlace = true
	for _, pipe := range []bool{false, true} {
		l := &callLog{failAt: failAt}
		err := readLog(t, data, opts, pipe, l)
		if fmt.Sprint(serr) != fmt.Sprint(err) || errors.Is(serr, errSinkFailed) != errors.Is(err, errSinkFailed) {
			t.Fatalf("%s: pipelined %v, decoded in place, says %v; framed first, sequential, %v", what, pipe, err, serr)
		}
		if !bytes.Equal(seq.b, l.b) {
			t.Fatalf("%s: pipelined %v, decoded in place, the sink got other calls (%d bytes of log, %d calls) than framed first, sequential (%d, %d)", what, pipe, len(l.b), l.calls, len(seq.b), seq.calls)
		}
	}
	return serr
}

// withBatches runs fn with the pipeline's batches set to hold at most
// items pieces or bytes bytes, batches of them.
func withBatches(batches, items, bytes int, fn func()) {
	b, i, y := pipeBatches, pipeItems, pipeBytes
	pipeBatches, pipeItems, pipeBytes = batches, items, bytes
	defer func() { pipeBatches, pipeItems, pipeBytes = b, i, y }()
	fn()
}

// tinyBatches are batch settings under which every model of the tests
// spans many batches, and some of its factors are "large".
var tinyBatches = []struct{ batches, items, bytes int }{{4, 4096, 1 << 20}, {2, 3, 64}, {3, 1, 1}, {4, 50, 4096}}

func msgpackOf(t testing.TB, m *model.Model) []byte {
	var b bytes.Buffer
	if err := Write(&b, m, Msgpack); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pipeModels are models of every kind, some over many batches, one with
// tables larger than a batch (its arenas dropped when the batch is
// reused), one with unaries and unary tables of 3.6-9.2 KB (wideModel).
func pipeModels() []*model.Model {
	big := gridModel(4, 5, 20, true) // 400-entry tables
	big.Factors = append(big.Factors, model.Factor{Kind: model.Dense, Vars: []int{0, 1, 2}, Table: make([]float64, 8000)})
	return append(seedModels(), gridModel(40, 40, 3, false), gridModel(20, 30, 4, true), big, wideModel())
}

// wideModel has 60 variables of 450 to 1149 states, each with its unaries
// and a unary table, and Potts factors between pairs of equal
// cardinality: values longer than the 4 KB the reader keeps buffered, so
// that many of them lie across the buffer's end mid-file, where decoding
// in place gives way to framing first.
func wideModel() *model.Model {
	rng := rand.New(rand.NewPCG(7, 8))
	cards := make([]int, 60)
	for i := range cards {
		cards[i] = 450 + (i/2*233)%700
	}
	m := model.New(cards)
	for i := range m.Unary {
		m.Unary[i] = rng.Float64()*2 - 1
	}
	for v, c := range cards {
		t := make([]float64, c)
		for k := range t {
			t[k] = rng.Float64()
		}
		m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: []int{v}, Table: t})
		if v%2 == 1 {
			m.Factors = append(m.Factors, model.Factor{Kind: model.Potts, Vars: []int{v - 1, v}, Weight: rng.Float64()})
		}
	}
	return m
}

// TestPipelineSameCalls: pipelined, every model gives the sink the calls
// the sequential read gives, with the fields in another order too, under
// every batch setting, totals or pieces bounded, and no goroutine is left.
func TestPipelineSameCalls(t *testing.T) {
	for _, bs := range tinyBatches {
		withBatches(bs.batches, bs.items, bs.bytes, func() {
			for i, m := range pipeModels() {
				data := msgpackOf(t, m)
				for j, d := range [][]byte{data, factorsFirst(t, data)} {
					for _, each := range []bool{false, true} {
						what := fmt.Sprintf("batches %v, model %d, order %d, each piece %v", bs, i, j, each)
						if err := samePiped(t, what, d, ReadOptions{EachPiece: each}, 0); err != nil {
							t.Fatalf("%s: %v", what, err)
						}
					}
				}
			}
		})
	}
}

// TestPipelineSameErrors: truncated and corrupted files fail pipelined
// with the sequential read's error, after the same calls.
func TestPipelineSameErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	models := []*model.Model{allKinds(), gridModel(8, 9, 3, true), sequenceModels()[0].m}
	withBatches(2, 3, 64, func() {
		for i, m := range models {
			data := msgpackOf(t, m)
			cases := [][]byte{append(append([]byte(nil), data...), 0xc0)} // trailing bytes
			for n := 0; n < len(data); n += 1 + len(data)/200 {
				cases = append(cases, data[:n])
			}
			for range 300 {
				bad := append([]byte(nil), data...)
				for range 1 + rng.IntN(3) {
					bad[rng.IntN(len(bad))] = byte(rng.IntN(256))
				}
				cases = append(cases, bad)
			}
			for k, d := range cases {
				for _, each := range []bool{false, true} {
					samePiped(t, fmt.Sprintf("model %d, case %d, each piece %v", i, k, each), d, ReadOptions{MaxEntries: 1 << 16, EachPiece: each}, 0)
				}
			}
		}
	})
}

// TestPipelineSinkErrorWins: a sink that fails at any call, Begin, a
// variable or a factor, stops the read with its error, pipelined as
// sequential, also when the file has a decode error at a later factor
// (a NaN weight) or trailing bytes, which the decoder may have reached
// first.
func TestPipelineSinkErrorWins(t *testing.T) {
	m := gridModel(10, 10, 3, false)
	// Factor 150's weight made NaN in the bytes (Write refuses it).
	late := msgpackOf(t, m)
	w := binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(m.Factors[150].Weight))
	if bytes.Count(late, w) != 1 {
		t.Fatal("factor 150's weight is not unique in the file")
	}
	k := bytes.Index(late, w)
	binary.BigEndian.PutUint64(late[k+1:], math.Float64bits(math.NaN()))
	trailing := append(msgpackOf(t, m), 0xc0)
	for _, data := range [][]byte{msgpackOf(t, m), late, trailing} {
		if err := samePiped(t, "no failure", data, ReadOptions{}, 0); err == nil && !bytes.Equal(data, msgpackOf(t, m)) {
			t.Fatal("the corrupted file reads")
		}
		for _, bs := range tinyBatches {
			withBatches(bs.batches, bs.items, bs.bytes, func() {
				for _, at := range []int{1, 2, 50, 101, 102, 150, 250, 280, 281} {
					err := samePiped(t, fmt.Sprintf("batches %v, failing at call %d", bs, at), data, ReadOptions{}, at)
					if !errors.Is(err, errSinkFailed) && at <= 101+150 {
						t.Fatalf("failing at call %d: %v", at, err)
					}
				}
			})
		}
	}
}

// TestPipelineCancel: a context ended while the sink is given the pieces
// stops the pipelined read with its cause, well before the end of a large
// model and at most a few batches and buffers after the sequential read
// would; a context ended before the read fails it before the sink hears
// of any piece. No goroutine is left.
func TestPipelineCancel(t *testing.T) {
	m := gridModel(200, 200, 3, false)
	data := msgpackOf(t, m)
	total := m.NumVars() + len(m.Factors) + 1
	for _, pipe := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		stopAt := m.NumVars() + 1000
		l := &callLog{onCall: func(n int) {
			if n == stopAt {
				cancel()
			}
		}}
		err := readLog(t, data, ReadOptions{Context: ctx}, pipe, l)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("pipelined %v: %v, want the context's cause", pipe, err)
		}
		// 64 KiB of the reader's buffer after the cancel, a factor of at
		// least 10 bytes each, and the batches in flight: the framer's and
		// the decoder's.
		if after := l.calls - stopAt; after > 65536/10+2*pipeBatches*pipeItems || l.calls >= total {
			t.Fatalf("pipelined %v: %d calls after the cancel (of %d)", pipe, after, total)
		}
		done, cancel2 := context.WithCancel(context.Background())
		cancel2()
		l = &callLog{}
		// (The error is the first read's: "unexpected end of input" at byte 0;
		// a caller with the context knows better, as modelfile's does.)
		if err := readLog(t, data, ReadOptions{Context: done}, pipe, l); err == nil || l.calls != 0 {
			t.Fatalf("pipelined %v, ended before: %v after %d calls", pipe, err, l.calls)
		}
	}
}

// FuzzReadMsgpackPipeline: pipelined (in tiny batches), any input gives
// the sink the calls the sequential read gives and fails with its error.
func FuzzReadMsgpackPipeline(f *testing.F) {
	addMsgpackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		withBatches(2, 2, 64, func() {
			for _, each := range []bool{false, true} {
				opts := fuzzLimits
				opts.EachPiece = each
				samePiped(t, fmt.Sprintf("each piece %v", each), data, opts, 0)
			}
		})
	})
}

// TestPipelineMemoryBounded: what a pipelined read allocates does not grow
// with the model: a grid of four times the factors (of many batches'
// worth each) allocates less than a batch's worth more (its cardinality
// runs and its bit per variable, here 2 words and 20 KB).
func TestPipelineMemoryBounded(t *testing.T) {
	nop := Sink{Begin: func(float64, int) error { return nil }, Var: func(int, int, []float64) error { return nil },
		Factor: func(int, *model.Factor) error { return nil }}
	alloc := func(side int) uint64 {
		data := msgpackOf(t, gridModel(side, side, 3, false))
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		if err := ReadMsgpackStream(bytesOpener(data), "g.msgpack", ReadOptions{Pipeline: true}, nop); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	small, large := alloc(200), alloc(400) // 79,600 and 319,200 factors
	if large > small+256<<10 {
		t.Fatalf("the read allocates %d bytes for a 400x400 grid, %d for 200x200: it grows with the model", large, small)
	}
	t.Logf("%d bytes for a 200x200 grid, %d for 400x400", small, large)
}

// TestHostileLengthCostsItsBytes: a 300-byte file whose first factor's
// kind claims a 2 GiB string fails with the sequential read's error,
// pipelined or not, without allocating what the length claims (take grows
// its buffer as the bytes arrive): where the file ends after the length,
// and where an earlier error (a cardinality 0) stops the read first while
// the pipeline's first stage reads the factors ahead.
func TestHostileLengthCostsItsBytes(t *testing.T) {
	data := msgpackOf(t, gridModel(2, 2, 2, false))
	kind := bytes.Index(data, []byte("\xa5potts"))
	cards := bytes.Index(data, []byte("\xa5cards\x94\x02"))
	if kind < 0 || cards < 0 {
		t.Fatal("the grid's encoding changed: no potts kind or cards")
	}
	copy(data[kind:], []byte{0xdb, 0x7f, 0xff, 0xff, 0xff}) // str32 of 2^31-1 bytes
	cut := bytes.Clone(data[:kind+5])
	data[cards+7] = 0
	for _, c := range []struct {
		d    []byte
		want string
	}{{cut, "unexpected end of input"}, {data, "cardinality 0"}} {
		for _, pipe := range []bool{false, true} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := readLog(t, c.d, ReadOptions{EachPiece: true}, pipe, &callLog{failAt: -1})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("pipelined %v: %v, want %q", pipe, err, c.want)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
				t.Fatalf("pipelined %v: %d MB allocated for a %d-byte file", pipe, a>>20, len(c.d))
			}
		}
	}
}
