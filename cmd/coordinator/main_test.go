package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A 3-variable chain with a known MAP: x = (1, 1, 0).
const chainUAI = `MARKOV
3
2 2 2
3
2 0 1
2 1 2
1 0
4
1 1 1 4
4
3 1 2 1
2
1 2
`

func TestSolveJSONSchema(t *testing.T) {
	model := writeFile(t, "chain.uai", chainUAI)
	out := filepath.Join(t.TempDir(), "sol.mpe")
	code, stdout, stderr := runCLI(t, "solve", "--json", "--quiet", "--threads", "1", "--out", out, model)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"status", "primal", "dual", "gap", "relaxed", "iterations", "seconds", "assignment", "algo", "threads", "model"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks key %q", k)
		}
	}
	if res["status"] != "optimal" {
		t.Errorf("status %v, want optimal", res["status"])
	}
	// ln 4 (x0=1,x1=1) + ln 3 (x1=1,x2=0) + ln 2 (x2=0)... factor 3 is unary on x1.
	asg := res["assignment"].([]any)
	got := []float64{asg[0].(float64), asg[1].(float64), asg[2].(float64)}
	if got[0] != 1 || got[1] != 1 || got[2] != 0 {
		t.Errorf("assignment %v, want [1 1 0]", got)
	}
	sol, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sol), "3 1 1 0") {
		t.Errorf("MPE file %q lacks the assignment", sol)
	}
	if m := res["model"].(map[string]any); m["variables"].(float64) != 3 || m["factors"].(float64) != 3 {
		t.Errorf("model %v", m)
	}
}

func TestBadInputOneLineError(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, "good.uai", chainUAI)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{}, "usage"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"missing model", []string{"solve"}, "MODEL"},
		{"two models", []string{"solve", good, good}, "exactly one"},
		{"absent file", []string{"solve", filepath.Join(dir, "nope.uai")}, "nope.uai"},
		{"unknown extension", []string{"solve", writeFile(t, "m.txt", "x")}, "unknown model format"},
		{"malformed uai", []string{"solve", writeFile(t, "bad.uai", "MARKOV\n2\n2 x\n")}, "bad.uai"},
		{"bad flag", []string{"solve", "--frob", good}, "frob"},
		{"bad threads", []string{"solve", "--threads", "0", good}, "--threads"},
		{"bad tau", []string{"solve", "--tau", "2", good}, "--tau"},
		{"nan eta", []string{"solve", "--eta", "NaN", good}, "--eta"},
		{"bad algo", []string{"solve", "--algo", "magic", good}, "--algo"},
		{"bad max-iter", []string{"solve", "--max-iter", "0", good}, "--max-iter"},
		{"bad tol", []string{"solve", "--tol", "-1", good}, "--tol"},
		{"bad step", []string{"solve", "--algo", "subgradient", "--step", "1/t^2", good}, "--step"},
		{"threads 0 for trws", []string{"solve", "--algo", "trws", "--threads", "0", good}, "--threads"},
		{"threads 0 for cmp", []string{"solve", "--algo", "cmp", "--threads", "0", good}, "--threads"},
		{"eta for trws", []string{"solve", "--algo", "trws", "--eta", "1", good}, "--eta"},
		{"slaves for cmp", []string{"solve", "--algo", "cmp", "--slaves", "chains", good}, "--slaves"},
		{"step for admm", []string{"solve", "--step", "1/t", good}, "--step"},
		{"tau for subgradient", []string{"solve", "--algo", "subgradient", "--tau", "1", good}, "--tau"},
		{"bad tighten", []string{"solve", "--tighten", "squares", good}, "--tighten"},
		{"soc without trws", []string{"solve", "--algo", "admm", "--tighten", "soc", good}, "--algo trws"},
		{"eps-descent without cmp", []string{"solve", "--eps-descent", good}, "--eps-descent"},
		{"bad out dir", []string{"solve", "--out", filepath.Join(dir, "no", "such", "x.mpe"), good}, "--out"},
		{"absent evidence", []string{"solve", "--evidence", filepath.Join(dir, "e.evid"), good}, "e.evid"},
		{"bad gen family", []string{"gen", "spinglass", "-o", filepath.Join(dir, "x.uai")}, "spinglass"},
		{"gen without -o", []string{"gen", "potts"}, "-o"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
			if tc.name != "no command" && tc.name != "unknown command" && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr has more than one line: %q", stderr)
			}
		})
	}
}

func TestSolveOtherAlgorithms(t *testing.T) {
	model := writeFile(t, "chain.uai", chainUAI)
	for _, args := range [][]string{{"--algo", "trws"}, {"--algo", "trws", "--threads", "3"}, {"--algo", "cmp"}, {"--algo", "cmp", "--eps-descent"}, {"--exact"}, {"--algo", "trws", "--exact"}, {"--tighten", "cycles"}} {
		code, stdout, stderr := runCLI(t, append(append([]string{"solve", "--json", "--quiet"}, args...), model)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		if res["status"] != "optimal" || math.Abs(res["primal"].(float64)-math.Log(16)) > 1e-12 {
			t.Errorf("%v: status %v primal %v, want optimal ln 16", args, res["status"], res["primal"])
		}
		// Convex max-product runs on one thread, whatever the default of
		// --threads; the result says so.
		if want := 1.0; args[0] == "--algo" && args[1] == "cmp" && res["threads"] != want {
			t.Errorf("%v: threads %v, want %v", args, res["threads"], want)
		}
	}
	code, stdout, stderr := runCLI(t, "solve", "--json", "--quiet", "--algo", "admm", "--threads", "3", model)
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res["threads"] != 3.0 || res["algo"] != "admm" {
		t.Errorf("solve --algo admm --threads 3: exit %d, %v, threads %v algo %v (%s)", code, err, res["threads"], res["algo"], stderr)
	}
	// Without --algo the chain (a pairwise model) gets TRW-S, on
	// --threads goroutines, and the result says why.
	code, stdout, stderr = runCLI(t, "solve", "--json", "--quiet", "--threads", "3", model)
	res = nil
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res["threads"] != 3.0 || res["algo"] != "trws" ||
		!strings.Contains(fmt.Sprint(res["why"]), "pairwise") {
		t.Errorf("solve --threads 3: exit %d, %v, threads %v algo %v why %v (%s)", code, err, res["threads"], res["algo"], res["why"], stderr)
	}
	// run distributes dual decomposition and TRW-S (on the parts), not
	// convex max-product.
	code, _, stderr = runCLI(t, "run", "--algo", "cmp", model)
	if code != 2 || !strings.Contains(stderr, "solve") {
		t.Errorf("run --algo cmp: exit %d, %q", code, stderr)
	}
}

// The job identity's hash is sha256 over the model file's bytes, a 0
// byte, the evidence file's bytes and a 0 byte, as when it re-read the
// files: checkpoints taken before still resume.
func TestLoadHashesTheJobFiles(t *testing.T) {
	model := writeFile(t, "chain.uai", chainUAI)
	evid := writeFile(t, "chain.evid", "1 0 1\n")
	for _, withEv := range []bool{false, true} {
		fs := flagSet("run")
		var f solveFlags
		f.register(fs)
		want := append([]byte(chainUAI), 0)
		if withEv {
			f.evidence = evid
			want = append(append(want, "1 0 1\n"...), 0)
		}
		h := sha256.New()
		if _, err := f.load(context.Background(), time.Now(), fs, "run", []string{model}, h, cli.New(io.Discard)); err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(want); !bytes.Equal(h.Sum(nil), sum[:]) {
			t.Fatalf("evidence %v: the hash is not sha256(model, 0[, evidence, 0])", withEv)
		}
	}
}

// --quiet silences progress only: the final status line is still printed
// on stderr, and with --json the result object on stdout.
func TestQuietPrintsTheResultLine(t *testing.T) {
	model := writeFile(t, "chain.uai", chainUAI)
	for _, args := range [][]string{{"--quiet"}, {"--quiet", "--json"}, {"--quiet", "--algo", "trws"}, {"--quiet", "--exact"}} {
		code, stdout, stderr := runCLI(t, append(append([]string{"solve", "--threads", "1"}, args...), model)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "status=optimal ") || !strings.Contains(lines[0], " primal=") || !strings.Contains(lines[0], " dual=") {
			t.Fatalf("%v: stderr %q, want the one status line", args, stderr)
		}
		if json := slices.Contains(args, "--json"); json != (stdout != "") {
			t.Fatalf("%v: stdout %q", args, stdout)
		}
	}
}

// Files that declare more than --max-entries allows, or a free variable no
// content vouches for, exit 2 with one line naming the file and the limit;
// a --max-entries that fits reads the model.
func TestMaxEntries(t *testing.T) {
	huge := writeFile(t, "huge.json", `{"format":"ddrun-model","version":1,"cards":[268435456]}`)
	chain := writeFile(t, "chain.uai", chainUAI)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{huge}, "huge.json: cards[0]: cardinality 268435456, but variable 0 is in no factor"},
		{[]string{"--max-entries", "9", chain}, "chain.uai:7: factor 2: its table of 2 entries brings the total number of table entries over the limit of 9"},
		{[]string{"--max-entries", "5", chain}, "chain.uai:3: variable 2: cardinality 2 brings the total number of states over the limit of 5"},
		{[]string{"--max-entries", "0", chain}, "--max-entries: 0 < 1"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, append([]string{"solve", "--quiet"}, c.args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI(t, "solve", "--quiet", "--max-entries", "10", chain); code != 0 {
		t.Errorf("--max-entries 10: exit %d, stderr %q", code, stderr)
	}
}

// --time-limit counts from the start of the command: a model that does not
// arrive in time (a FIFO no one writes) ends with exit 2 and one line, and
// so does a signal (a cancelled context) while loading.
func TestLoadingStopsOnTimeLimitAndSignal(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "m.uai")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	start := time.Now()
	code, _, stderr := runCLI(t, "solve", "--quiet", "--time-limit", "200ms", fifo)
	if code != 2 || !strings.Contains(stderr, "m.uai") || !strings.Contains(stderr, "--time-limit 200ms reached while loading") || time.Since(start) > 5*time.Second {
		t.Fatalf("exit %d after %v, stderr %q", code, time.Since(start), stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	start = time.Now()
	code = run(ctx, []string{"solve", "--quiet", fifo}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "m.uai") || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled: exit %d after %v, stderr %q", code, time.Since(start), errb.String())
	}
}
