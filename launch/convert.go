package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ddrun/ddrun/model/modelfile"
	"github.com/ddrun/ddrun/shard"
)

// Convert converts the model file in to out (modelfile.Convert). With
// local, an indexed output (.ddx) gets its factors in breadth-first order
// (shard.Reorder), so that the factor ranges of a sharded run are
// connected regions even when in does not list its factors in a local
// order: in is converted to a temporary file beside out first (unless it
// is already indexed), then reordered into out. The progress goes to
// o.Progress in both passes.
func Convert(ctx context.Context, in, out string, o modelfile.ConvertOptions, local bool) error {
	if !local {
		return modelfile.Convert(ctx, in, out, o)
	}
	if modelfile.FormatOf(out) != modelfile.Indexed {
		return fmt.Errorf("%s: a breadth-first order is for indexed outputs (.ddx)", out)
	}
	src := in
	if modelfile.FormatOf(in) != modelfile.Indexed {
		tmp, err := os.CreateTemp(filepath.Dir(out), ".convert-*.ddx")
		if err != nil {
			return fmt.Errorf("indexed: %w", err)
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if err := modelfile.Convert(ctx, in, tmp.Name(), o); err != nil {
			return err
		}
		src = tmp.Name()
	}
	return shard.Reorder(src, out, shard.ReorderOptions{MaxEntries: o.MaxEntries, Context: ctx, Progress: o.Progress})
}
