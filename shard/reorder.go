package shard

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/partition"
)

// ReorderOptions say how Reorder reads and reports.
type ReorderOptions struct {
	// MaxEntries bounds each factor's table (0: the indexed reader's
	// default); the windows (Memory), not the model's total, bound what
	// the rewrite holds.
	MaxEntries int
	// Context, when not nil, stops the rewrite.
	Context context.Context
	// Progress, when not nil, is called now and then with the factors
	// written and their total.
	Progress func(done, total int)
	// Memory bounds the bytes of factors held at a time (0:
	// DefaultReorderMemory); the input is read once per window of the
	// new order that fits it.
	Memory int64
}

// Reorder rewrites the indexed model file in as out with its factors in
// breadth-first order (partition.BreadthFirst): PlanLayout cuts a file's
// factors, in file order, into one range per worker, so a model whose
// factors are not written in a local order (a shuffled grid, most models
// converted from UAI files that are not grids written row by row) shares
// nearly every variable between the parts; reordered, its parts are
// connected regions whose boundary is a wavefront. The variables, their
// unaries and the constant are unchanged, so an assignment means the same
// and scores the same on both files.
//
// It holds the scopes (4 bytes per scope entry and 8 per factor for the
// offsets) and the order's own lists (partition.BreadthFirst: about 40
// bytes per pairwise factor in all), and the factors themselves a window
// of the new order at a time, at most o.Memory bytes: the input is read
// sequentially once per window. On failure out is removed.
func Reorder(in, out string, o ReorderOptions) (err error) {
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("reorder: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reorder: %w", err)
	}
	// The windows (Memory) bound what the rewrite holds, and each factor
	// is checked against the budget as it is read (a part, planned with
	// it, may not hold more): the model's total is not this process's.
	sc, err := indexed.OpenScan(f, st.Size(), in, indexed.ReadOptions{MaxEntries: math.MaxInt, Context: ctx, Ranges: true})
	if err != nil {
		return err
	}
	g, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("reorder: %w", err)
	}
	var w *indexed.Writer
	defer func() {
		if w != nil && err != nil {
			w.Abort()
		}
		if cerr := g.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("reorder: write %s: %w", out, cerr)
		}
		if err != nil {
			os.Remove(out)
		}
	}()
	w, err = indexed.NewStreamWriter(g, sc.Constant(), indexed.WriteOptions{BlockSize: sc.BlockSize(), TempDir: filepath.Dir(out), Context: ctx})
	if err != nil {
		return err
	}
	// One walk: the variables go straight to the writer, the scopes, the
	// record positions and each factor's size in memory are kept for the
	// order and the copy.
	nf := sc.NumFactors()
	var cards indexed.CardRuns
	s := partition.Scopes{NumVars: sc.NumVars(), Off: make([]int64, 1, nf+1)}
	first := int64(-1) // factor 0's record
	size := make([]uint32, nf)
	err = sc.Walk(indexed.Visitor{
		Cards:   func(from, n, card int) error { cards.Append(n, card); return nil },
		Unaries: func(i int, u []float64) error { return w.AddVar(cards.Card(i), u) },
		Factor: func(a int, rec indexed.Record, f *model.Factor) error {
			if a == 0 {
				first = rec.Pos
			}
			for _, v := range f.Vars {
				s.Vars = append(s.Vars, int32(v))
			}
			s.Off = append(s.Off, int64(len(s.Vars)))
			size[a] = uint32(min(heldBytes(len(f.Vars), rec.Payload.Entries()), math.MaxUint32))
			return nil
		},
	})
	if err != nil {
		return err
	}
	order, err := partition.BreadthFirst(s)
	if err != nil {
		return fmt.Errorf("reorder %s: %w", in, err)
	}
	s = partition.Scopes{}
	// Cut the order into windows of at most o.Memory bytes of factors,
	// and turn it into each factor's place.
	budget := o.Memory
	if budget <= 0 {
		budget = DefaultReorderMemory
	}
	cuts := []int{0}
	held := int64(0)
	for i, a := range order {
		if held > 0 && held+int64(size[a]) > budget {
			cuts, held = append(cuts, i), 0
		}
		held += int64(size[a])
	}
	cuts = append(cuts, nf)
	size = nil
	place := order // reused: place[a] is factor a's index in the order
	inv := make([]int32, nf)
	for i, a := range order {
		inv[a] = int32(i)
	}
	copy(place, inv)
	inv = nil
	// One sequential read of every factor per window, keeping the
	// window's factors (copied out of the reader's shared batches) in
	// their places, then written in order.
	var win []model.Factor
	limit := model.EntryLimit(o.MaxEntries)
	done := 0
	for k := 0; k+1 < len(cuts) && nf > 0; k++ {
		lo, hi := cuts[k], cuts[k+1]
		win = slices.Grow(win[:0], hi-lo)[:hi-lo]
		err := sc.ReadRecords(first, 0, nf, cards.Card, func(a int, f *model.Factor) error {
			if len(f.Table) > limit {
				return fmt.Errorf("reorder: %s: factor %d has %d table entries, over the budget of %d per process (--max-entries)", in, a, len(f.Table), limit)
			}
			if i := int(place[a]); i >= lo && i < hi {
				win[i-lo] = owned(f)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := range win {
			if err := w.Add(&win[i]); err != nil {
				return err
			}
			win[i] = model.Factor{}
			if done++; o.Progress != nil && (done%4096 == 0 || done == nf) {
				o.Progress(done, nf)
			}
		}
	}
	return w.Close()
}

// DefaultReorderMemory is the most bytes of factors Reorder holds at a
// time by default: a model bigger than that is read once per window.
const DefaultReorderMemory = 256 << 20

// heldBytes is about what a factor of arity vars and entries payload
// entries takes in memory (model.Factor, its scope and its tables).
func heldBytes(vars, entries int) int64 {
	return 96 + 8*int64(vars) + 8*int64(entries)
}

// owned is a copy of f whose slices are its own (ReadRecords cuts scopes
// and tables from allocations a batch shares).
func owned(f *model.Factor) model.Factor {
	g := *f
	g.Vars = slices.Clone(f.Vars)
	g.Table = slices.Clone(f.Table)
	if e := f.EmissionScores(); e != nil {
		g.SetEmission(slices.Clone(e))
	}
	return g
}
