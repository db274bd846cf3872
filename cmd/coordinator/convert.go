package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/launch"
	"github.com/ddrun/ddrun/model/modelfile"
)

// cmdConvert converts a model file between formats (modelfile.Convert):
// to .ddx it streams UAI tables and folds factors over fewer than 2
// variables into the unaries (unless --keep-unary-factors), and reports
// progress on stderr every second. Any failure to read or write is the
// user's input (exit 2).
func cmdConvert(ctx context.Context, args []string, con *cli.Console) error {
	fs := flagSet("convert")
	maxEntries := fs.Int("max-entries", modelfile.DefaultMaxEntries, "most table entries the input may declare in all, and, on its own, most variable states (streamed to .ddx from UAI or msgpack: in each table, each variable, and the variables)")
	order := fs.String("order", "file", "to .ddx: the factors' order, file (as read) or bfs (breadth-first: a small boundary for sharded runs of models not written in a local order)")
	keepUnary := fs.Bool("keep-unary-factors", false, "to .ddx: write factors over 0 or 1 variables as factors; by default they are folded into the constant and the unaries (a UAI file's unary tables become unaries), unless a sum would be +Inf")
	pos, quiet, err := parseQuiet(fs, args, con)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("convert: want IN OUT, have %d arguments", len(pos))
	}
	if *maxEntries < 1 {
		return usagef("convert: --max-entries: %d < 1", *maxEntries)
	}
	in, out := pos[0], pos[1]
	if *order != "file" && *order != "bfs" {
		return usagef("convert: --order %q: want file or bfs", *order)
	}
	if in == out {
		return usagef("convert: IN and OUT are the same file")
	}
	opts := modelfile.ConvertOptions{MaxEntries: *maxEntries, KeepUnaryFactors: *keepUnary}
	var mu sync.Mutex
	var done, total int
	if !quiet {
		opts.Progress = func(d, t int) {
			mu.Lock()
			done, total = d, t
			mu.Unlock()
		}
		defer cli.Every(time.Second, func(elapsed time.Duration) {
			mu.Lock()
			d, t := done, total
			mu.Unlock()
			if t > 0 {
				sec := elapsed.Seconds()
				con.Print("progress", fmt.Sprintf("convert: %d / %d factors written (%.0f s)", d, t, sec), "factors_written", d, "factors", t, "seconds", sec)
			}
		})()
	}
	if err := launch.Convert(ctx, in, out, opts, *order == "bfs"); err != nil {
		return usageError{fmt.Errorf("convert: %w", err)}
	}
	if !quiet {
		con.Print("wrote", "wrote "+out, "file", out)
	}
	return nil
}
