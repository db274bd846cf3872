package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/model/native"
)

// TestGenStreamsSameBytes checks that gen's streaming writers give, byte
// for byte, the files of the model built in memory and saved.
func TestGenStreamsSameBytes(t *testing.T) {
	dir := t.TempDir()
	for _, fam := range []string{"potts", "ising"} {
		for _, size := range [][2]int{{1, 1}, {1, 6}, {5, 1}, {4, 7}} {
			for _, rho := range []string{"1", "900"} { // 900: UAI's shifted, split tables
				o := generate.GridOptions{Height: size[0], Width: size[1], Labels: 3, Seed: 7}
				fmt.Sscan(rho, &o.Rho)
				var m *model.Model
				args := []string{"gen", fam, "--height", fmt.Sprint(o.Height), "--width", fmt.Sprint(o.Width), "--rho", rho, "--seed", "7", "--quiet"}
				if fam == "potts" {
					m = generate.Potts(o)
					args = append(args, "--labels", "3")
				} else {
					m = generate.Ising(o)
				}
				for _, ext := range []string{"uai", "uai.gz", "LG", "json", "json.gz", "msgpack", "msgpack.gz", "ddx"} {
					want, got := filepath.Join(dir, "want."+ext), filepath.Join(dir, "got."+ext)
					if err := modelfile.Save(want, m); err != nil {
						t.Fatal(err)
					}
					if code, _, stderr := runCLI(t, append(args, "-o", got)...); code != 0 {
						t.Fatalf("%v: exit %d: %s", args, code, stderr)
					}
					a, _ := os.ReadFile(want)
					b, _ := os.ReadFile(got)
					if len(a) == 0 || !bytes.Equal(a, b) {
						t.Fatalf("%s %dx%d rho %s .%s: streamed file differs from the saved model (%d vs %d bytes)", fam, o.Height, o.Width, rho, ext, len(b), len(a))
					}
				}
			}
		}
	}
}

// TestGenStreamBoundedMemory streams a 300x300 Potts grid and samples the
// heap as it goes: it must stay within a few MB, while the built model
// alone takes tens.
func TestGenStreamBoundedMemory(t *testing.T) {
	o := generate.GridOptions{Height: 300, Width: 300, Labels: 4, Rho: 1, Seed: 1}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	sample := func(int64, int64) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	if err := native.WriteStream(io.Discard, generate.PottsStream(o), native.Msgpack, sample); err != nil {
		t.Fatal(err)
	}
	streamed := peak - base
	m := generate.Potts(o)
	runtime.ReadMemStats(&ms)
	built := ms.HeapAlloc - base
	runtime.KeepAlive(m)
	t.Logf("streaming peak heap %d KB, built model %d KB", streamed>>10, built>>10)
	if streamed > 8<<20 || built < 4*streamed {
		t.Fatalf("streaming peak heap %d KB, built model %d KB: want a few MB, far below the model", streamed>>10, built>>10)
	}
}

// TestGenLogicDDX: gen logic writes .ddx with the factors over one
// variable folded into the unaries, as indexed.Write with FoldUnary.
func TestGenLogicDDX(t *testing.T) {
	o := generate.LogicOptions{Vars: 30, Factors: 40, Couplings: 20, MaxArity: 4, Rho: 1, Seed: 3}
	m := generate.Logic(o)
	small := 0
	for _, f := range m.Factors {
		if len(f.Vars) < 2 {
			small++
		}
	}
	if small == 0 {
		t.Fatal("no factor over one variable to fold: pick another seed")
	}
	var want bytes.Buffer
	if err := indexed.Write(&want, m, indexed.WriteOptions{FoldUnary: true}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "l.ddx")
	code, _, stderr := runCLI(t, "gen", "logic", "--vars", "30", "--factors", "40", "--couplings", "20", "--max-arity", "4", "--seed", "3", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("gen logic .ddx differs from the folded model written (%d vs %d bytes)", len(got), want.Len())
	}
	back, err := indexed.ReadFile(out, indexed.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for a, f := range back.Factors {
		if len(f.Vars) < 2 {
			t.Fatalf("factor %d over %d variables", a, len(f.Vars))
		}
	}
	code, _, stderr = runCLI(t, "gen", "potts", "-o", filepath.Join(t.TempDir(), "x.txt"))
	if code != 2 || !strings.Contains(stderr, ".ddx") {
		t.Fatalf("unknown extension: exit %d, %q", code, stderr)
	}
}

func TestGenHelp(t *testing.T) {
	for _, args := range [][]string{{"gen", "-h"}, {"gen", "--help"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "usage: coordinator gen") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
	if code, _, _ := runCLI(t, "gen", "potts", "-h"); code != 0 {
		t.Errorf("gen potts -h: exit %d", code)
	}
	code, _, stderr := runCLI(t, "gen", "potts", "--height", "0", "-o", filepath.Join(t.TempDir(), "x.uai"))
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("bad size: exit %d, stderr %q, want 2 and one line", code, stderr)
	}
}

// TestGenMaxEntriesPerProcess: --max-entries bounds what gen's process
// holds, not the model: a grid of more variable states than the budget is
// written streaming and reads back as the grid built in memory; a logic
// model, built whole, over the budget is refused; and a 10^8-variable
// 4-label grid, over what any model may hold whole, is a valid stream.
func TestGenMaxEntriesPerProcess(t *testing.T) {
	o := generate.GridOptions{Height: 12, Width: 10, Labels: 4, Rho: 1, Seed: 5}
	dir := t.TempDir()
	want, got := filepath.Join(dir, "want.msgpack"), filepath.Join(dir, "got.msgpack")
	m := generate.Potts(o)
	if err := modelfile.Save(want, m); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "gen", "potts", "--height", "12", "--width", "10", "--labels", "4", "--seed", "5", "--max-entries", "100", "--quiet", "-o", got); code != 0 {
		t.Fatalf("a 480-state grid under a budget of 100: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(want)
	b, _ := os.ReadFile(got)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("streamed file differs from the model built in memory (%d vs %d bytes)", len(b), len(a))
	}
	back, err := modelfile.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int, m.NumVars())
	for i := range x {
		x[i] = (i * 7) % 4
	}
	if back.NumVars() != m.NumVars() || len(back.Factors) != len(m.Factors) || back.Score(x) != m.Score(x) {
		t.Fatalf("read back: %d variables, %d factors, score %v; built: %d, %d, %v", back.NumVars(), len(back.Factors), back.Score(x), m.NumVars(), len(m.Factors), m.Score(x))
	}
	ddx := filepath.Join(dir, "got.ddx") // the structure spilled beside it: nothing held either
	if code, _, stderr := runCLI(t, "gen", "potts", "--height", "12", "--width", "10", "--labels", "4", "--seed", "5", "--max-entries", "100", "--quiet", "-o", ddx); code != 0 {
		t.Fatalf("a 480-state .ddx grid under a budget of 100: exit %d: %s", code, stderr)
	}
	if back, err = modelfile.Load(ddx); err != nil {
		t.Fatal(err)
	}
	if back.NumVars() != m.NumVars() || back.Score(x) != m.Score(x) {
		t.Fatalf(".ddx read back: %d variables, score %v; built: %d, %v", back.NumVars(), back.Score(x), m.NumVars(), m.Score(x))
	}
	code, _, stderr := runCLI(t, "gen", "logic", "--vars", "60", "--max-entries", "100", "-o", filepath.Join(dir, "l.uai"))
	if code != 2 || !strings.Contains(stderr, "built whole") {
		t.Fatalf("a 120-state logic model under a budget of 100: exit %d, %q", code, stderr)
	}
	huge := generate.GridOptions{Height: 10000, Width: 10000, Labels: 4, Rho: 1}
	if huge.Validate() == nil || huge.ValidateStream() != nil {
		t.Fatalf("10^8 4-label grid: whole %v, streamed %v; want refused whole, valid streamed", huge.Validate(), huge.ValidateStream())
	}
}
