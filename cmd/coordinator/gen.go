package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/model/modelfile"
)

func cmdGen(ctx context.Context, args []string, stdout io.Writer, con *cli.Console) error {
	if len(args) == 0 {
		return usagef("gen: want a family: potts, ising, logic, sequence or multilabel")
	}
	family := args[0]
	switch family {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, genUsage)
		return nil
	}
	if family == "sequence" || family == "multilabel" {
		return cmdGenLearn(family, args[1:], stdout, con)
	}
	fs := flagSet("gen " + family)
	out := fs.String("o", "", "output `FILE` (.uai[.gz], .LG, .json, .msgpack (optionally .gz) or .ddx)")
	seed := fs.Int64("seed", 1, "random seed")
	maxEntries := fs.Int("max-entries", modelfile.DefaultMaxEntries, "most variable states this process may hold (a streamed grid holds none: any size)")
	var grid generate.GridOptions
	var logic generate.LogicOptions
	pair := "potts"
	switch family {
	case "potts", "ising":
		fs.IntVar(&grid.Height, "height", 20, "grid rows")
		fs.IntVar(&grid.Width, "width", 20, "grid columns")
		fs.Float64Var(&grid.Rho, "rho", 1, "coupling range: weights ~ U[-rho, rho]")
		if family == "potts" {
			fs.IntVar(&grid.Labels, "labels", 8, "labels per variable")
			fs.StringVar(&pair, "pair", "potts", "edge term of weight w: potts (w if the labels are equal), linear (-w min(|x-y|, trunc)), quad (-w min((x-y)^2, trunc)), or dense (a general table, entries ~ U[-rho, rho])")
			fs.Float64Var(&grid.Trunc, "trunc", 2, "truncation of --pair linear and quad (> 0)")
		}
	case "logic":
		fs.IntVar(&logic.Vars, "vars", 50, "binary variables")
		fs.IntVar(&logic.Factors, "factors", 40, "logic factors")
		fs.IntVar(&logic.Couplings, "couplings", 60, "pair and Potts factors")
		fs.IntVar(&logic.MaxArity, "max-arity", 6, "largest logic factor arity")
		fs.Float64Var(&logic.Rho, "rho", 1, "coupling range: weights ~ U[-rho, rho]")
	default:
		return usagef("gen: unknown family %q (want potts, ising or logic)", family)
	}
	pos, quiet, err := parseQuiet(fs, args[1:], con)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("gen %s: unexpected argument %q", family, pos[0])
	}
	if *maxEntries < 1 {
		return usagef("gen %s: --max-entries: %d < 1", family, *maxEntries)
	}
	if *out == "" {
		return usagef("gen %s: -o FILE is required", family)
	}
	if modelfile.FormatOf(*out) == modelfile.Unknown {
		return usagef("gen %s: -o %s: unknown model format (want .uai, .uai.gz, .LG, .json, .msgpack (optionally .gz) or .ddx)", family, *out)
	}
	grid.Seed, logic.Seed = *seed, *seed
	if pair != "potts" {
		if grid.Pair, err = generate.ParsePairTerm(pair); err != nil {
			return usagef("gen %s: --pair: %w", family, err)
		}
	}
	s, m, err := generate.Family(family, grid, logic, *maxEntries)
	if err != nil {
		return usagef("gen %s: %w", family, err)
	}
	if m != nil {
		if err := modelfile.SaveGenerated(ctx, *out, m); err != nil {
			return fmt.Errorf("gen %s: %w", family, err)
		}
		printWrote(con, *out, m.NumVars(), len(m.Factors))
		return nil
	}
	var progress func(done, total int64)
	if !quiet {
		progress = con.Percent("gen "+family+" "+*out, time.Second)
	}
	if err := modelfile.SaveStream(ctx, *out, s, progress); err != nil {
		return fmt.Errorf("gen %s: %w", family, err)
	}
	printWrote(con, *out, s.NumVars(), s.NumFactors())
	return nil
}

func printWrote(con *cli.Console, path string, vars, factors int) {
	con.Print("wrote", fmt.Sprintf("wrote %s: %d variables, %d factors", path, vars, factors), "file", path, "variables", vars, "factors", factors)
}

const genUsage = `usage: coordinator gen potts|ising|logic [flags] -o FILE
       coordinator gen sequence|multilabel [flags] -o DIR   (planted learning data, docs/learning.md)
FILE: .uai, .uai.gz, .LG, .json or .msgpack (optionally .gz), or .ddx
run 'coordinator gen FAMILY -h' for a family's flags; potts and ising grids
are written streaming, in bounded memory, whatever their size (.ddx: the
structure goes to temporary files beside FILE until the end); logic models
are built whole, then written`
