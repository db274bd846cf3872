package modelfile

import (
	"context"
	"fmt"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
	"github.com/ddrun/ddrun/model/native"
	"github.com/ddrun/ddrun/model/uai"
)

// DefaultMaxEntries is the readers' default bound on the table entries a
// file may declare (ConvertOptions.MaxEntries, the --max-entries flags):
// model.DefaultMaxEntries.
const DefaultMaxEntries = model.DefaultMaxEntries

// ddxOptions is how generated models are written to .ddx files: factors
// over fewer than 2 variables folded into the unaries, as Convert does;
// the structure spilled beside the output (indexed.WriteStreamFile's
// default); stopped when ctx ends.
func ddxOptions(ctx context.Context) indexed.WriteOptions {
	return indexed.WriteOptions{FoldUnary: true, Context: ctx}
}

// SaveStream writes a model given as a stream (a generated grid) to path as
// Save would write the model, without building it: UAI and ddrun's JSON or
// msgpack streaming, .ddx with the structure spilled beside path until the
// end. progress (may be nil) gets the factors written and their total.
func SaveStream(ctx context.Context, path string, s model.Source, progress model.Progress) error {
	switch FormatOf(path) {
	case UAI:
		return uai.WriteStreamFile(path, s, progress)
	case Native:
		return native.WriteStreamFile(path, s, progress)
	case Indexed:
		return indexed.WriteStreamFile(path, s, ddxOptions(ctx), progress)
	}
	return fmt.Errorf("%s: unknown model format", path)
}

// SaveGenerated writes a model built whole (a generated logic model) to
// path: as Save, except that a .ddx file is written as SaveStream writes
// one (factors over fewer than 2 variables folded into the unaries,
// stopped when ctx ends).
func SaveGenerated(ctx context.Context, path string, m *model.Model) error {
	if FormatOf(path) == Indexed {
		return indexed.WriteStreamFile(path, model.SourceOf(m), ddxOptions(ctx), nil)
	}
	return Save(path, m)
}
