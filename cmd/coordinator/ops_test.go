package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/trace"
)

// checkTraceEndsOnResult reads a --trace file and checks that its last row
// is the --json result, and returns the rows.
func checkTraceEndsOnResult(t *testing.T, path, stdout string) []trace.Row {
	t.Helper()
	var res engine.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, stdout)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("empty trace")
	}
	last := rows[len(rows)-1]
	same := func(p *float64, v float64) bool { return p != nil && *p == v }
	if last.Iteration != res.Iterations || last.Seconds != res.Seconds || !same(res.Dual, last.Dual) ||
		!same(res.Primal, last.Primal) || !same(res.Gap, last.Gap) {
		t.Errorf("last row %+v, result %s", last, stdout)
	}
	return rows
}

// --trace writes one row per iteration (per node under --exact, with the
// iterations added up as the result counts them) and ends on the --json
// result.
func TestTraceEndsOnTheResult(t *testing.T) {
	model := writeFile(t, "chain.uai", chainUAI)
	grid := filepath.Join("..", "..", "examples", "potts-20x20.uai")
	ising := frustrated(t)
	for _, c := range []struct {
		name  string
		args  []string
		exact bool
	}{
		{"admm", []string{"--max-iter", "200", grid}, false},
		{"subgradient", []string{"--algo", "subgradient", "--max-iter", "50", grid}, false},
		{"trws", []string{"--algo", "trws", grid}, false},
		{"exact", []string{"--exact", "--elim-memory", "0", "--max-iter", "300", ising}, true},
		{"exact trws", []string{"--exact", "--elim-memory", "0", "--algo", "trws", "--max-iter", "50", ising}, true},
		{"exact tiny", []string{"--exact", "--elim-memory", "0", model}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.csv")
			code, stdout, stderr := runCLI(t, append([]string{"solve", "--json", "--trace", path}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			rows := checkTraceEndsOnResult(t, path, stdout)
			for i, r := range rows {
				switch {
				case !c.exact && r.Iteration != i+1:
					t.Fatalf("row %d is iteration %d: want one row per iteration", i, r.Iteration)
				case c.exact && (r.Nodes != i+1 || (i > 0 && r.Iteration < rows[i-1].Iteration)):
					t.Fatalf("row %d: nodes %d, iteration %d: want one row per node, iterations adding up", i, r.Nodes, r.Iteration)
				}
			}
			if c.exact {
				// The progress lines count iterations as the result does.
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				var lastIter string
				for _, l := range lines {
					if strings.HasPrefix(l, "iter=") {
						lastIter = strings.Fields(l)[0]
						if !strings.Contains(l, " nodes=") || strings.Contains(l, "pres=") {
							t.Errorf("branch and bound progress line %q", l)
						}
					}
				}
				if last := rows[len(rows)-1]; len(rows) == 1 && lastIter != fmt.Sprintf("iter=%d", last.Iteration) {
					t.Errorf("the one node's progress says %s, the result %d iterations", lastIter, last.Iteration)
				}
			}
		})
	}
}

// frustrated is a 4x4 frustrated Ising grid: branch and bound needs a few
// nodes (exact.TestExactOnFrustratedGrids), in milliseconds.
func frustrated(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ising.uai")
	if code, _, stderr := runCLI(t, "gen", "ising", "--height", "4", "--width", "4", "--rho", "2", "--seed", "2", "--quiet", "-o", p); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return p
}

// With --log-format json every line on stderr is a JSON object: progress,
// the result line, and the error line of a failed command.
func TestLogFormatJSON(t *testing.T) {
	grid := filepath.Join("..", "..", "examples", "potts-20x20.uai")
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		wantMsgs []string
	}{
		{"solve", []string{"solve", "--max-iter", "50", grid}, 0, []string{"progress", "result"}},
		{"exact", []string{"solve", "--exact", "--elim-memory", "0", "--max-iter", "300", frustrated(t)}, 0, []string{"progress", "branch and bound", "result"}},
		{"cycles", []string{"solve", "--algo", "trws", "--tighten", "cycles", "--max-iter", "20", grid}, 0, []string{"cycle inequalities", "result"}},
		{"soc on a grid", []string{"solve", "--algo", "trws", "--tighten", "cycles,soc", "--max-iter", "20", grid}, 0, []string{"soc", "cycle inequalities", "result"}},
		{"bad model", []string{"solve", filepath.Join(dir, "missing.uai")}, 2, []string{"missing.uai"}},
		{"bad duration", []string{"solve", "--time-limit", "soon", grid}, 2, []string{"use e.g. 30s"}},
		{"gen", []string{"gen", "potts", "--height", "3", "--width", "3", "-o", filepath.Join(dir, "g.uai")}, 0, []string{"wrote"}},
		{"convert", []string{"convert", grid, filepath.Join(dir, "g.ddx")}, 0, []string{"wrote"}},
		{"serve", []string{"serve", "--max-jobs", "0"}, 2, []string{"--max-jobs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(c.args, "--log-format", "json")...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			var msgs []string
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("stderr line is not JSON: %q", l)
				}
				msgs = append(msgs, fmt.Sprint(rec["msg"]))
			}
			all := strings.Join(msgs, "|")
			for _, w := range c.wantMsgs {
				if !strings.Contains(all, w) {
					t.Errorf("no record %q in %q", w, all)
				}
			}
		})
	}
}

// Every duration flag takes a bare number as seconds, and says how to write
// a duration when it cannot read one.
func TestDurationFlags(t *testing.T) {
	fs := flagSet("run")
	var f solveFlags
	f.register(fs)
	var r runFlags
	r.register(fs)
	n := 0
	fs.VisitAll(func(fl *flag.Flag) {
		if strings.Contains(fmt.Sprintf("%T", fl.Value), "durationValue") {
			n++
			if err := fl.Value.Set("30"); err != nil || fl.Value.String() != "30s" {
				t.Errorf("--%s 30: %v, %s", fl.Name, err, fl.Value)
			}
			if fmt.Sprintf("%T", fl.Value) == "*flag.durationValue" {
				t.Errorf("--%s is flag.Duration: it does not take a bare number", fl.Name)
			}
		}
	})
	if n < 7 { // time-limit, wait, step-timeout, lost-after, spare-wait, checkpoint-interval, nats-timeout
		t.Errorf("%d duration flags, want at least 7", n)
	}
	code, _, stderr := runCLI(t, "solve", "--time-limit", "30", "--max-iter", "5", filepath.Join("..", "..", "examples", "potts-20x20.uai"))
	if code != 0 {
		t.Errorf("--time-limit 30: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "run", "--wait", "a while", "x.uai")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-wait: use e.g. 30s, 5m or 1h") {
		t.Errorf("--wait 'a while': exit %d: %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, stdout, _ := runCLI(t, arg)
		if code != 0 || !strings.HasPrefix(stdout, "coordinator ") || !strings.Contains(stdout, " commit ") {
			t.Errorf("%s: exit %d, %q", arg, code, stdout)
		}
	}
}

// plot draws two traces into a PNG and an SVG that decode; bad traces and
// unknown formats are one-line errors.
func TestPlot(t *testing.T) {
	dir := t.TempDir()
	grid := filepath.Join("..", "..", "examples", "potts-20x20.uai")
	var traces []string
	for _, algo := range []string{"admm", "trws"} {
		p := filepath.Join(dir, algo+".csv")
		if code, _, stderr := runCLI(t, "solve", "--quiet", "--algo", algo, "--max-iter", "100", "--trace", p, grid); code != 0 {
			t.Fatalf("solve: %s", stderr)
		}
		traces = append(traces, p)
	}
	pngPath, svgPath := filepath.Join(dir, "c.png"), filepath.Join(dir, "c.svg")
	for _, out := range []string{pngPath, svgPath} {
		if code, _, stderr := runCLI(t, append([]string{"plot", "-o", out}, traces...)...); code != 0 {
			t.Fatalf("plot -o %s: exit %d: %s", out, code, stderr)
		}
	}
	b, err := os.ReadFile(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	if w := img.Bounds().Dx(); w < 400 {
		t.Errorf("PNG %d pixels wide", w)
	}
	s, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(s, []byte("<svg")) || !bytes.Contains(s, []byte("admm dual")) || !bytes.HasSuffix(bytes.TrimSpace(s), []byte("</svg>")) {
		t.Errorf("not an SVG with the legend: %.200s", s)
	}
	bad := writeFile(t, "bad.csv", strings.Join(trace.Columns, ",")+"\n1,0.5,x,1,1,0,0,0,0\n")
	empty := writeFile(t, "empty.csv", strings.Join(trace.Columns, ",")+"\n")
	noDual := writeFile(t, "nodual.csv", strings.Join(trace.Columns, ",")+"\n1,0.5,-Inf,-Inf,NaN,0,0,0,0\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "-o", filepath.Join(dir, "x.pdf"), traces[0]}, `unknown picture format ".pdf"`},
		{[]string{"plot", traces[0]}, "-o FILE.png or FILE.svg is required"},
		{[]string{"plot", "-o", pngPath}, "want one or more TRACE"},
		{[]string{"plot", "-o", pngPath, filepath.Join(dir, "missing.csv")}, "missing.csv"},
		{[]string{"plot", "-o", pngPath, bad}, `bad.csv: trace: line 2: dual "x" is not a number`},
		{[]string{"plot", "-o", pngPath, empty}, "empty.csv: no rows"},
		{[]string{"plot", "-o", pngPath, noDual}, "nodual.csv: no finite dual"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}
