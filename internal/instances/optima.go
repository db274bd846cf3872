package instances

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Optimum is a row of the folder's OPTIMA.tsv: a model (File, relative
// to the folder, in slash form), its number of variables, the best known
// score, whether it is proven optimal, and the best known upper bound.
type Optimum struct {
	File   string
	Vars   int
	Best   float64
	Proven bool
	Upper  float64
}

// Optima reads OPTIMA.tsv (skipping the test when the folder or the file
// is absent, failing it on a malformed row).
func Optima(t testing.TB) []Optimum {
	t.Helper()
	f, err := os.Open(filepath.Join(Require(t), "OPTIMA.tsv"))
	if err != nil {
		t.Skipf("no OPTIMA.tsv: %v", err)
	}
	defer f.Close()
	var out []Optimum
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) < 6 || fs[0] == "file" {
			continue
		}
		o := Optimum{File: fs[0], Proven: fs[4] == "yes"}
		if o.Vars, err = strconv.Atoi(fs[1]); err != nil {
			t.Fatalf("OPTIMA.tsv %s: variables: %v", fs[0], err)
		}
		if o.Best, err = strconv.ParseFloat(fs[3], 64); err != nil {
			t.Fatalf("OPTIMA.tsv %s: best known: %v", fs[0], err)
		}
		if o.Upper, err = strconv.ParseFloat(fs[5], 64); err != nil {
			t.Fatalf("OPTIMA.tsv %s: upper bound: %v", fs[0], err)
		}
		out = append(out, o)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("OPTIMA.tsv: %v", err)
	}
	return out
}
