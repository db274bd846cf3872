package main

import (
	"fmt"
	"io"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/modelfile"
)

func cmdGen(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("gen: want a family: potts, ising or logic")
	}
	family := args[0]
	fs := flagSet("gen " + family)
	out := fs.String("o", "", "output `FILE` (.uai[.gz], .json, .msgpack)")
	seed := fs.Int64("seed", 1, "random seed")
	var grid generate.GridOptions
	var logic generate.LogicOptions
	switch family {
	case "potts", "ising":
		fs.IntVar(&grid.Height, "height", 20, "grid rows")
		fs.IntVar(&grid.Width, "width", 20, "grid columns")
		fs.Float64Var(&grid.Rho, "rho", 1, "coupling range: weights ~ U[-rho, rho]")
		if family == "potts" {
			fs.IntVar(&grid.Labels, "labels", 8, "labels per variable")
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
	pos, err := parseInterleaved(fs, args[1:], stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("gen %s: unexpected argument %q", family, pos[0])
	}
	if *out == "" {
		return usagef("gen %s: -o FILE is required", family)
	}
	if modelfile.FormatOf(*out) == modelfile.Unknown {
		return usagef("gen %s: -o %s: unknown model format (want .uai, .uai.gz, .json or .msgpack)", family, *out)
	}
	grid.Seed, logic.Seed = *seed, *seed
	var m *model.Model
	if family == "logic" {
		if err := logic.Validate(); err != nil {
			return usagef("gen %s: %w", family, err)
		}
		m = generate.Logic(logic)
	} else {
		if err := grid.Validate(); err != nil {
			return usagef("gen %s: %w", family, err)
		}
		if family == "potts" {
			m = generate.Potts(grid)
		} else {
			m = generate.Ising(grid)
		}
	}
	if err := modelfile.Save(*out, m); err != nil {
		return fmt.Errorf("gen %s: %w", family, err)
	}
	fmt.Fprintf(stderr, "wrote %s: %d variables, %d factors\n", *out, m.NumVars(), len(m.Factors))
	return nil
}
