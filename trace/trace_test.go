package trace

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/solver"
)

func TestWriteReadRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{
		FromProgress(solver.Progress{Iteration: 1, Dual: 10.5, Primal: math.Inf(-1), Gap: math.Inf(1), Eta: 0.1, Elapsed: 1500 * time.Millisecond}),
		{Iteration: 2, Seconds: 2, Dual: 9.25, Primal: 8, Gap: 1.25, PrimalRes: 1e-3, DualRes: 2e-4, Eta: 0.2, Nodes: 7},
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(b.String(), strings.Join(Columns, ",")+"\n") {
		t.Fatalf("no header:\n%s", b.String())
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], rows[i])
		}
	}
}

func TestReadBadInput(t *testing.T) {
	head := strings.Join(Columns, ",") + "\n"
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "no header"},
		{"other header", "a,b,c,d,e,f,g,h,i\n", "column 1"},
		{"short row", head + "1,2,3\n", "wrong number of fields"},
		{"word", head + "1,0.5,x,1,1,0,0,0,0\n", `line 2: dual "x"`},
		{"negative nodes", head + "1,0.5,1,1,1,0,0,0,-3\n", "line 2: nodes"},
		{"negative seconds", head + "1,-1,1,1,1,0,0,0,0\n", "line 2: seconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	head := strings.Join(Columns, ",") + "\n"
	f.Add(head + "1,0.5,3,-Inf,+Inf,0,0,0.1,0\n")
	f.Add(head + "1,0.5,3,2,1,0,0,0.1,4\n2,1,2.5,2,0.5,0,0,0.1,9\n")
	f.Add("iteration\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		w, _ := NewWriter(&b)
		for _, r := range rows {
			_ = w.Write(r)
		}
		again, err := Read(&b)
		if err != nil || len(again) != len(rows) {
			t.Fatalf("rows written back do not read: %v", err)
		}
	})
}

// The recorder writes one row per report and ends on the result: merged
// into the last report's row when both are of the same iteration, after it
// otherwise.
func TestRecorderEndsOnTheResult(t *testing.T) {
	inf := math.Inf(-1)
	reports := []solver.Progress{
		{Iteration: 1, Dual: 10, Primal: inf, Gap: math.Inf(1), Eta: 0.1, Elapsed: time.Second},
		{Iteration: 2, Dual: 9, Primal: 7, Gap: 2, PrimalRes: 0.5, Eta: 0.2, Elapsed: 2 * time.Second, Nodes: 3},
	}
	for _, c := range []struct {
		name     string
		res      solver.Result
		wantRows int
	}{
		{"same iteration", solver.Result{Iterations: 2, Dual: 9, Primal: 8, Gap: 1, Elapsed: 3 * time.Second}, 2},
		{"later iteration", solver.Result{Iterations: 5, Dual: 8.5, Primal: 8, Gap: 0.5, Elapsed: 4 * time.Second}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			r, err := NewRecorder(&b)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range reports {
				r.Progress(p)
			}
			if got, err := Read(bytes.NewReader(b.Bytes())); err != nil || len(got) != 1 {
				t.Fatalf("before Finish: %d rows (%v), want the first report only", len(got), err)
			}
			if err := r.Finish(c.res); err != nil {
				t.Fatal(err)
			}
			rows, err := Read(&b)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != c.wantRows {
				t.Fatalf("%d rows, want %d", len(rows), c.wantRows)
			}
			last := rows[len(rows)-1]
			want := Row{Iteration: c.res.Iterations, Seconds: c.res.Elapsed.Seconds(), Dual: c.res.Dual, Primal: c.res.Primal,
				Gap: c.res.Gap, PrimalRes: 0.5, Eta: 0.2, Nodes: 3}
			if last != want {
				t.Errorf("last row %+v, want %+v", last, want)
			}
			if rows[1].Iteration != 2 {
				t.Errorf("second row is iteration %d, want 2", rows[1].Iteration)
			}
		})
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A write that fails mid-trace is reported by Finish.
func TestRecorderReportsWriteErrors(t *testing.T) {
	r, err := NewRecorder(&failWriter{n: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.Progress(solver.Progress{Iteration: 1})
	r.Progress(solver.Progress{Iteration: 2})
	if err := r.Finish(solver.Result{Iterations: 2}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Finish: %v, want the write error", err)
	}
}

// A run that ends without a result keeps its last report: Flush writes the
// row held back, once.
func TestRecorderFlush(t *testing.T) {
	var b bytes.Buffer
	r, err := NewRecorder(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatalf("Flush with nothing held back: %v", err)
	}
	r.Progress(solver.Progress{Iteration: 1, Dual: 3})
	r.Progress(solver.Progress{Iteration: 2, Dual: 2})
	for range 2 {
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].Iteration != 2 || rows[1].Dual != 2 {
		t.Fatalf("rows %+v, want iterations 1 and 2", rows)
	}
}
