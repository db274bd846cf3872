package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ddrun/ddrun"

// order is docs/architecture.md's package map from the bottom up: a
// package may import only packages listed before it.
var order = []string{
	// Leaf utilities that import nothing of ddrun.
	"internal/ratelimit", "internal/rusage", "internal/fanin",
	// The model and its files.
	"model", "model/uai", "model/native", "model/indexed", "model/wcsp", "model/cfn", "model/modelfile", "generate",
	// Decompositions and reformulations of a model.
	"partition", "partition/multilevel", "tighten",
	// The algorithms.
	"solver", "trace", "internal/smalllp", "internal/localsearch", "internal/pairterm", "internal/primal", "slaves",
	"trws", "dtrws", "convexmp", "consensus", "exact", "elim", "anytime", "engine", "learn", "shard",
	// The distributed runtime.
	"transport", "internal/jobworker", "checkpoint", "jobstate", "cluster", "dsearch", "dtrws/remote", "metrics",
	// The job service (its runner is launch's).
	"service",
	// The front door: where a job runs (package launch).
	"launch",
	// Pictures of traces (coordinator plot): nothing but the commands
	// imports them, trace and metrics included.
	"trace/plot",
	// The commands.
	"internal/cli", "internal/natsflags", "cmd/coordinator", "cmd/worker",
	// Test support, and tests of whole programs.
	"internal/instances", "internal/oracle", "internal/testlog", "internal/testcert", "slaves/slavetest", "internal/archtest", "e2e",
}

// forbidden are imports that the order alone would allow.
var forbidden = map[string][]string{
	// Bytes only: no job protocol, no model, no numerics (leaf
	// utilities, see leaves, are allowed).
	"transport": {"*"},
	// TRW-S and convex max-product share the solver vocabulary, not DD's.
	"trws":     {"consensus", "slaves"},
	"convexmp": {"consensus", "slaves"},
	// Distributed TRW-S: parts of TRW-S and their multipliers, no DD-ADMM.
	"dtrws": {"consensus", "slaves"},
	// The numerics know nothing of files.
	"slaves":    {"model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile"},
	"consensus": {"model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile"},
	"exact":     {"model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile"},
	// Elimination knows no relaxation and no file.
	"elim": {"consensus", "slaves", "trws", "convexmp", "exact", "model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile"},
	// The engine chooses and builds algorithms: it reads no file and
	// prints nothing of its own (the front ends do).
	"engine": {"model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile", "trace", "learn", "shard"},
	// Learning owns its own formats; traces are the command's.
	"learn": {"model/uai", "model/native", "model/wcsp", "model/cfn", "model/modelfile", "trace"},
	// The runtime runs dual decomposition; it does not choose algorithms.
	"cluster": {"trws", "convexmp", "exact", "model/uai", "model/modelfile"},
	// Distributed branch and bound ships the model in msgpack only and
	// knows nothing of dual decomposition's job protocol.
	"dsearch": {"cluster", "jobstate", "checkpoint", "model/uai", "model/modelfile"},
	// Distributed TRW-S's runtime: its own messages over the transport,
	// parts read through shard; nothing of DD's job protocol.
	"dtrws/remote": {"cluster", "jobstate", "checkpoint", "consensus", "slaves", "model/uai", "model/modelfile"},
	// Operators' view: fed by the commands, it knows only the solver's
	// progress reports, nothing of the runtime it observes.
	"metrics": {"consensus", "slaves", "transport", "internal/jobworker", "checkpoint", "jobstate", "cluster", "dsearch", "shard", "exact", "trws", "convexmp"},
}

// leaves are the utilities that every package may import, "*" rules
// included: they import nothing of ddrun themselves (TestPackageMap).
var leaves = map[string]bool{"internal/ratelimit": true, "internal/rusage": true, "internal/fanin": true}

// imports returns the module's packages (relative paths) and what each
// imports from the module, test files included when tests is set.
func imports(t *testing.T, tests bool) map[string][]string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin" || n == "deploy" || n == "docs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if dep, ok := strings.CutPrefix(p, module+"/"); ok && dep != rel && !slices.Contains(out[rel], dep) {
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPackageMap checks the non-test imports of every package against the
// map: each package is placed, and imports only what is placed before it
// and not forbidden to it.
func TestPackageMap(t *testing.T) {
	pkgs := imports(t, false)
	rank := map[string]int{}
	for i, p := range order {
		rank[p] = i
	}
	for p, deps := range pkgs {
		r, ok := rank[p]
		if !ok {
			t.Errorf("package %s has no place in the map (internal/archtest's order and docs/architecture.md)", p)
			continue
		}
		for _, d := range deps {
			if rd, ok := rank[d]; ok && rd > r {
				t.Errorf("%s imports %s, which the map places above it", p, d)
			}
			for _, f := range forbidden[p] {
				if f == "*" && !leaves[d] || f == d {
					t.Errorf("%s imports %s, which the map forbids", p, d)
				}
			}
		}
	}
	for l := range leaves {
		if len(pkgs[l]) > 0 {
			t.Errorf("leaf %s imports %v", l, pkgs[l])
		}
	}
	for _, p := range order {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("the map places %s, which does not exist", p)
		}
	}
}

// TestNothingImportsCommands checks that no package, tests included,
// imports a command or the end-to-end tests.
func TestNothingImportsCommands(t *testing.T) {
	for p, deps := range imports(t, true) {
		for _, d := range deps {
			if strings.HasPrefix(d, "cmd/") || d == "e2e" {
				t.Errorf("%s imports %s", p, d)
			}
		}
	}
}
