// Package plot draws convergence traces (`coordinator plot`): the dual and
// the primal of --trace files against seconds, one colour per trace, the
// dual solid and the primal dashed, as a PNG or SVG picture.
//
// It reads traces through package trace and knows nothing of the
// algorithms, the runtime or the command line; neither trace nor the
// runtime imports it (internal/archtest).
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ddrun/ddrun/trace"
)

// Title is the default title of a picture of the traces at paths: ddrun
// convergence, and the name of a single trace.
func Title(paths []string) string {
	t := "ddrun convergence"
	if len(paths) == 1 {
		t += ": " + Name(paths[0])
	}
	return t
}

// Picture draws runs (the rows of the traces named by the file names in
// names) under title, 8 by 5 inches, in format ("png" or "svg"). Unless
// full is set, the score axis spans the rows after each run's first 5%
// (see draw).
func Picture(title string, names []string, runs [][]trace.Row, full bool, format string) (io.WriterTo, error) {
	p, err := draw(title, names, runs, full)
	if err != nil {
		return nil, err
	}
	return p.WriterTo(8*vg.Inch, 5*vg.Inch, format)
}

// ReadFile reads a --trace file; one without a finite dual has nothing
// to plot.
func ReadFile(path string) ([]trace.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := trace.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range rows {
		if finiteNum(r.Dual) {
			return rows, nil
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows (a trace of a run that had not reported yet)", path)
	}
	return nil, errors.New(path + ": no finite dual to plot (an infeasible model?)")
}

func finiteNum(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// Name is a trace's name in the legend: its file name without .csv.
func Name(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".csv")
}

// draw draws the runs: dual solid and primal dashed in the run's
// colour, rows with a value that is not finite left out.
//
// Unless full is set, the score axis spans the values of the rows after
// each run's first 5% (and its first row): the first iterations'
// bounds are often far above the rest, and the lines are clipped there.
func draw(title string, names []string, runs [][]trace.Row, full bool) (*plot.Plot, error) {
	p := plot.New()
	ylo, yhi := math.NaN(), math.NaN()
	if !full {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, rows := range runs {
			for _, r := range rows[min(len(rows)-1, max(1, len(rows)/20)):] {
				for _, v := range []float64{r.Dual, r.Primal} {
					if finiteNum(v) {
						lo, hi = min(lo, v), max(hi, v)
					}
				}
			}
		}
		if lo < hi {
			pad := 0.05 * (hi - lo)
			ylo, yhi = lo-pad, hi+pad
		}
	}
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "score (dual: upper bound, primal: best assignment)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	for i, rows := range runs {
		var dual, primal plotter.XYs
		for _, r := range rows {
			if finiteNum(r.Dual) {
				dual = append(dual, plotter.XY{X: r.Seconds, Y: r.Dual})
			}
			if finiteNum(r.Primal) {
				primal = append(primal, plotter.XY{X: r.Seconds, Y: r.Primal})
			}
		}
		c := plotutil.Color(i)
		name := Name(names[i])
		if err := addLine(p, dual, c, nil, name+" dual"); err != nil {
			return nil, err
		}
		if err := addLine(p, primal, c, []vg.Length{vg.Points(6), vg.Points(3)}, name+" primal"); err != nil {
			return nil, err
		}
	}
	// After the lines, which widen the axes to their data.
	p.X.Min = 0
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{}, roundTicks{}
	if !math.IsNaN(ylo) {
		p.Y.Min, p.Y.Max = ylo, yhi
	}
	return p, nil
}

func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, dashes []vg.Length, label string) error {
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// roundTicks labels an axis (the seconds, the scores) at 4 to 10 round
// values (1, 2, 2.5 or 5 times a power of ten apart), with unlabelled minor
// ticks between them, and as many decimals as the step needs: gonum's
// default ticker may label a short run's time axis at a single value.
type roundTicks struct{}

// Ticks returns the ticks of [lo, hi].
func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finiteNum(lo) || !finiteNum(hi) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step, minors := niceStep((hi - lo) / 6)
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if f := step * math.Pow10(decimals); math.Abs(f-math.Round(f)) > 1e-6 {
		decimals++ // 2.5 times a power of ten
	}
	var ticks []plot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for k := 0; ; k++ {
		v := first + float64(k)*step
		if v > hi+step*1e-9 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		for m := 1; m < minors; m++ {
			if mv := v + float64(m)*step/float64(minors); mv <= hi {
				ticks = append(ticks, plot.Tick{Value: mv})
			}
		}
	}
	return ticks
}

// niceStep returns the round step (1, 2, 2.5 or 5 times a power of ten)
// nearest above raw, and how many minor intervals divide it.
func niceStep(raw float64) (step float64, minors int) {
	p := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []struct {
		f float64
		n int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}, {10, 5}} {
		if m.f*p >= raw*(1-1e-9) {
			return m.f * p, m.n
		}
	}
	return 10 * p, 5
}
