package uai

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/internal/instances"
	"github.com/ddrun/ddrun/model"
)

// TestSharedInstances reads every *.uai in the instances folder (package
// internal/instances), with its .evid
// when there is one, validates it, checks the sizes listed in OPTIMA.tsv,
// and round-trips the smaller models through Write.
func TestSharedInstances(t *testing.T) {
	instancesDir := instances.Require(t)
	sizes := readOptimaSizes(t, filepath.Join(instancesDir, "OPTIMA.tsv"))
	var paths []string
	err := filepath.WalkDir(instancesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".uai") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skipf("no .uai files under %s", instancesDir)
	}
	for _, path := range paths {
		rel, _ := filepath.Rel(instancesDir, path)
		t.Run(rel, func(t *testing.T) {
			m, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			// The structured pairwise factors found (model.StructurePairs)
			// score as the dense tables do.
			dense, err := ReadFileWith(path, ReadOptions{Log: OptionsFor(path).Log, KeepDense: true})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[model.Kind]int{}
			for a := range m.Factors {
				if k := m.Factors[a].Kind; k != model.Dense {
					kinds[k]++
				}
				if dense.Factors[a].Kind != model.Dense {
					t.Fatalf("factor %d: KeepDense read a %v", a, dense.Factors[a].Kind)
				}
			}
			if len(kinds) > 0 {
				t.Logf("structured pairwise factors: %v of %d", kinds, len(m.Factors))
			}
			sameScores(t, dense, m, 200, 1e-9)
			if want, ok := sizes[rel]; ok {
				maxCard := 0
				for _, c := range m.Cards {
					maxCard = max(maxCard, c)
				}
				if len(m.Cards) != want[0] || maxCard != want[1] {
					t.Errorf("%d variables, max domain %d; OPTIMA.tsv says %d, %d", len(m.Cards), maxCard, want[0], want[1])
				}
			}
			if _, err := os.Stat(path + ".evid"); err == nil {
				ev, err := ReadEvidenceFile(path+".evid", m)
				if err != nil {
					t.Fatal(err)
				}
				if err := ev.Check(m); err != nil {
					t.Fatal(err)
				}
			}
			if fi, err := os.Stat(path); err == nil && fi.Size() < 1<<20 {
				var buf bytes.Buffer
				if err := Write(&buf, m); err != nil {
					t.Fatal(err)
				}
				back, err := Read(&buf, "back.uai")
				if err != nil {
					t.Fatal(err)
				}
				sameScores(t, m, back, 20, 1e-9)
			}
		})
	}
}

// readOptimaSizes returns, per model path, its number of variables and
// maximum domain size as listed in OPTIMA.tsv (empty if the file is absent).
func readOptimaSizes(t *testing.T, path string) map[string][2]int {
	sizes := map[string][2]int{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return sizes
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 3 {
			continue
		}
		n, err1 := strconv.Atoi(cols[1])
		d, err2 := strconv.Atoi(cols[2])
		if err1 == nil && err2 == nil {
			sizes[cols[0]] = [2]int{n, d}
		}
	}
	return sizes
}
