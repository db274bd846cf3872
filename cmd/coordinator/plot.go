package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/trace"
	"github.com/ddrun/ddrun/trace/plot"
)

// cmdPlot is `coordinator plot -o OUT.png|OUT.svg TRACE...`: the traces
// drawn by package trace/plot, written atomically to -o.
func cmdPlot(args []string, con *cli.Console) error {
	fs := flagSet("plot")
	out := fs.String("o", "", "the picture: `FILE`.png or FILE.svg")
	title := fs.String("title", "", "the title (default: ddrun convergence, and the file name of a single trace)")
	full := fs.Bool("full", false, "scale the score axis to every row (default: to the rows after each run's first 5%, where the first iterations' bounds would squeeze the rest)")
	pos, err := parseFlags(fs, args, con)
	if err != nil {
		return err
	}
	con.Start(cli.Options{})
	if *out == "" {
		return usagef("plot: -o FILE.png or FILE.svg is required")
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(*out)), ".")
	if format != "png" && format != "svg" {
		return usagef("plot: -o %s: unknown picture format %q (want .png or .svg)", *out, filepath.Ext(*out))
	}
	if len(pos) == 0 {
		return usagef("plot: want one or more TRACE files (written by solve or run --trace)")
	}
	if st, err := os.Stat(filepath.Dir(*out)); err != nil || !st.IsDir() {
		return usagef("plot: -o: directory %s does not exist", filepath.Dir(*out))
	}
	runs := make([][]trace.Row, len(pos))
	for i, path := range pos {
		if runs[i], err = plot.ReadFile(path); err != nil {
			return usageError{fmt.Errorf("plot: %w", err)}
		}
	}
	t := *title
	if t == "" {
		t = plot.Title(pos)
	}
	wt, err := plot.Picture(t, pos, runs, *full, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := launch.WriteAtomic("-o", *out, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
		return err
	}
	con.Print("wrote", "wrote "+*out, "file", *out)
	return nil
}
