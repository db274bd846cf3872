package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ddrun/ddrun/solver"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"30s", 30 * time.Second, false},
		{"5m", 5 * time.Minute, false},
		{"30", 30 * time.Second, false},
		{"1.5", 1500 * time.Millisecond, false},
		{"0", 0, false},
		{"abc", 0, true},
		{"NaN", 0, true},
		{"1e300", 0, true},
		{"", 0, true},
	} {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), "use e.g. 30s, 5m or 1h") {
			t.Errorf("ParseDuration(%q): error %q does not say how to write one", c.in, err)
		}
	}
	var d time.Duration
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	fs.Var(Duration(&d, time.Minute), "wait", "")
	if d != time.Minute {
		t.Fatalf("default %v, want 1m", d)
	}
	if err := fs.Parse([]string{"--wait", "7"}); err != nil || d != 7*time.Second {
		t.Errorf("--wait 7: %v, %v", d, err)
	}
	if err := fs.Parse([]string{"--wait", "soon"}); err == nil || !strings.Contains(err.Error(), "-wait: use e.g.") {
		t.Errorf("--wait soon: %v", err)
	}
}

func TestVersionLine(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name                string
		bi                  debug.BuildInfo
		ldVersion, ldCommit string
		want                string
	}{
		{"nothing", debug.BuildInfo{}, "", "", "x unknown commit unknown"},
		{"devel, vcs", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "", "", "x (devel) commit abc123+modified"},
		{"ldflags", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v1.2.0", "def", "x v1.2.0 commit def"},
		{"module version wins", debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v9", "", "x v0.3.0 commit unknown"},
	} {
		if got := versionLine("x", &c.bi, c.ldVersion, c.ldCommit); !strings.HasPrefix(got, c.want+" go") {
			t.Errorf("%s: %q, want %q followed by the Go version", c.name, got, c.want)
		}
	}
}

func TestFormatFlag(t *testing.T) {
	c := New(new(bytes.Buffer))
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	c.Register(fs)
	if err := fs.Parse([]string{"--log-format", "xml"}); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("--log-format xml: %v", err)
	}
	if err := fs.Parse([]string{"--log-format", "json"}); err != nil || c.Format != JSON {
		t.Errorf("--log-format json: %v, %q", err, c.Format)
	}
}

func reports() []solver.Progress {
	inf := math.Inf(1)
	return []solver.Progress{
		{Iteration: 1, Dual: 10, Primal: -inf, Gap: inf, Elapsed: 0},
		{Iteration: 2, Dual: 9, Primal: 5, Gap: 4, Elapsed: 100 * time.Millisecond},
		{Iteration: 3, Dual: 8, Primal: 6, Gap: 2, Elapsed: 300 * time.Millisecond, Nodes: 4, Open: 2,
			PrimalRes: 1e-3, DualRes: 2e-3, Eta: 0.5, Fields: solver.HasPrimalRes | solver.HasDualRes | solver.HasEta},
	}
}

// A progress line shows the residuals and eta only when the algorithm
// fills them: TRW-S none, convex max-product dres and eta, dual
// decomposition all three; the JSON records likewise.
func TestProgressShowsFilledFields(t *testing.T) {
	base := solver.Progress{Iteration: 7, Dual: 3, Primal: 2, Gap: 1, PrimalRes: 1e-4, DualRes: 2e-4, Eta: 0.25, Elapsed: time.Second}
	for _, c := range []struct {
		fields    solver.Field
		want, not []string
	}{
		{0, nil, []string{"pres=", "dres=", "eta="}},
		{solver.HasDualRes | solver.HasEta, []string{"dres=2.00e-04", "eta=0.25"}, []string{"pres="}},
		{solver.HasPrimalRes | solver.HasDualRes | solver.HasEta, []string{"pres=1.00e-04", "dres=2.00e-04", "eta=0.25"}, nil},
	} {
		p := base
		p.Fields = c.fields
		line := ProgressLine(p, false)
		var b bytes.Buffer
		con := New(&b)
		con.Format = JSON
		con.Start(Options{})
		con.Progress(p)
		rec := b.String()
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("fields %b: %q lacks %q", c.fields, line, w)
			}
			key := map[string]string{"pres=": `"primal_res"`, "dres=": `"dual_res"`, "eta=": `"eta"`}[w[:strings.Index(w, "=")+1]]
			if !strings.Contains(rec, key) {
				t.Errorf("fields %b: JSON %q lacks %s", c.fields, rec, key)
			}
		}
		for _, w := range c.not {
			if strings.Contains(line, w) {
				t.Errorf("fields %b: %q shows %q", c.fields, line, w)
			}
			key := map[string]string{"pres=": `"primal_res"`, "dres=": `"dual_res"`, "eta=": `"eta"`}[w]
			if strings.Contains(rec, key) {
				t.Errorf("fields %b: JSON %q shows %s", c.fields, rec, key)
			}
		}
		if !strings.HasPrefix(line, "iter=7 dual=3 primal=2 gap=1") || !strings.HasSuffix(line, " elapsed=1.000s") {
			t.Errorf("fields %b: %q", c.fields, line)
		}
	}
}

// In JSON format every line is one JSON object: progress (with nulls for
// infinite bounds), printed lines, log records and the error line.
func TestJSONConsole(t *testing.T) {
	var b bytes.Buffer
	c := New(&b)
	c.Format = JSON
	c.Start(Options{})
	for _, p := range reports() {
		c.Progress(p)
	}
	c.Print("result", "status=optimal", "status", "optimal", "gap", math.NaN())
	c.Logger().Info("connected", "threads", 2)
	c.Writer().Write([]byte("raw line\n")) // what a child process would write is its own business
	c.Error("coordinator", "model.uai: line 3: bad")
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var msgs []string
	for _, l := range lines {
		if l == "raw line" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		msgs = append(msgs, rec["msg"].(string))
		if rec["msg"] == "progress" && rec["iteration"] == 1.0 && (rec["primal"] != nil || rec["gap"] != nil) {
			t.Errorf("infinite bounds are not null: %q", l)
		}
	}
	// Iterations 1 and 3: 2 came 100 ms after 1.
	if want := "progress progress result connected model.uai: line 3: bad"; strings.Join(msgs, " ") != want {
		t.Errorf("records %q, want %q", strings.Join(msgs, " "), want)
	}
}

// Under --quiet (a warnings-only logger) Print still prints, in JSON as in
// text: the result line is not a log line that --quiet silences.
func TestPrintUnderQuiet(t *testing.T) {
	for _, f := range []Format{Text, JSON} {
		var b bytes.Buffer
		c := New(&b)
		c.Format = f
		c.Start(Options{Level: slog.LevelWarn, Quiet: true})
		c.Logger().Info("chatter")
		c.Print("result", "status=optimal", "status", "optimal")
		if out := b.String(); strings.Contains(out, "chatter") || !strings.Contains(out, "optimal") {
			t.Errorf("%s: %q, want the result line only", f, out)
		}
	}
}

// In text format progress lines come at most every 250 ms and say what
// the result says; under branch and bound with nodes and open nodes.
func TestTextProgressLines(t *testing.T) {
	for _, exact := range []bool{false, true} {
		var b bytes.Buffer
		c := New(&b)
		c.Start(Options{Exact: exact})
		for _, p := range reports() {
			c.Progress(p)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "iter=1 ") || !strings.HasPrefix(lines[1], "iter=3 ") {
			t.Fatalf("exact %v: lines %q, want iterations 1 and 3", exact, lines)
		}
		if got := strings.Contains(lines[1], "nodes=4 open=2"); got != exact {
			t.Errorf("exact %v: %q", exact, lines[1])
		}
		if got := strings.Contains(lines[1], "pres="); got == exact {
			t.Errorf("exact %v: residuals in %q", exact, lines[1])
		}
	}
}

// The live line is redrawn in place; what others write takes it away and
// puts it back; Close takes it away.
func TestLiveLine(t *testing.T) {
	var b bytes.Buffer
	c := New(&b)
	on := true
	c.Start(Options{MaxIter: 4, TimeLimit: 10 * time.Second, Live: &on})
	c.Progress(solver.Progress{Iteration: 1, Dual: 3, Primal: 2, Gap: 1, Elapsed: time.Second})
	if got := b.String(); !strings.HasPrefix(got, "\r[#####...............]  25% ETA 3s iter 1 dual 3 primal 2 gap 1") {
		t.Fatalf("live line %q", got)
	}
	b.Reset()
	c.Logger().Info("hello")
	if got := b.String(); !strings.HasPrefix(got, "\r\x1b[K") || !strings.Contains(got, "msg=hello\n\r[#####") {
		t.Errorf("a log line under the live line: %q", got)
	}
	b.Reset()
	c.Close()
	if b.String() != "\r\x1b[K" {
		t.Errorf("Close wrote %q", b.String())
	}
	// The time limit nearer than the iteration limit; branch and bound.
	c.Start(Options{MaxIter: 1000, TimeLimit: 4 * time.Second, Exact: true, Live: &on})
	line := c.liveLine(solver.Progress{Iteration: 500, Nodes: 7, Open: 3, Dual: 5, Primal: math.Inf(-1), Gap: math.Inf(1), Elapsed: 3 * time.Second})
	if !strings.HasPrefix(line, "[###############.....]  75% ETA 1s nodes 7 open 3 bound 5 incumbent none gap none iter 500") {
		t.Errorf("exact live line %q", line)
	}
}

func TestFormatIn(t *testing.T) {
	for _, c := range []struct {
		args []string
		want Format
	}{
		{[]string{"solve", "--log-format", "json"}, JSON},
		{[]string{"solve", "-log-format=json", "x"}, JSON},
		{[]string{"solve", "--log-format", "text"}, Text},
		{[]string{"solve", "--", "--log-format", "json"}, Text},
		{[]string{"solve", "--log-format"}, Text},
	} {
		if got := FormatIn(c.args); got != c.want {
			t.Errorf("FormatIn(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
