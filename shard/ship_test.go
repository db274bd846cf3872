package shard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ddrun/ddrun/generate"
	"github.com/ddrun/ddrun/model"
)

// fileFetch is a Fetch that reads the blocks from the file at path,
// through change (nil: as they are), and counts them.
type fileFetch struct {
	t      *testing.T
	b      *Blocks
	path   string
	change func(k int, data []byte) []byte
	asked  int
}

func (f *fileFetch) fetch(_ context.Context, blocks []int, got func(k int, data []byte) error) error {
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	for _, k := range blocks {
		off, n := f.b.Block(k)
		data := make([]byte, n)
		if _, err := file.ReadAt(data, off); err != nil {
			return err
		}
		if f.change != nil {
			data = f.change(k, data)
		}
		f.asked++
		if err := got(k, data); err != nil {
			return err
		}
	}
	return nil
}

// hashFile hashes the file at path (HashBlocks).
func hashFile(path string, blockSize int) (*Blocks, error) {
	f, size, err := openSized(path, "test")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return HashBlocks(context.Background(), f, size, blockSize)
}

// announced plans the file at path on w workers and announces its blocks
// of MinBlockSize in the specs, which it returns through their wire form.
func announced(t *testing.T, path string, w int) (*Blocks, []*Spec) {
	t.Helper()
	l, err := PlanLayout(path, w, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := hashFile(path, MinBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Announce(l); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Digest(); err != nil || !bytes.Equal(d, digest) {
		t.Fatalf("the layout's digest changed with the blocks announced: %v", err)
	}
	var specs []*Spec
	for k := range l.Specs {
		l.Specs[k].Receive = k%2 == 1
		s := specTrip(t, &l.Specs[k])
		if !bytes.Equal(s.Root, b.Root) || s.BlockSize != MinBlockSize || s.Receive != (k%2 == 1) {
			t.Fatalf("spec %d decoded with root %x, blocks of %d, receive %v", k, s.Root, s.BlockSize, s.Receive)
		}
		specs = append(specs, s)
	}
	return b, specs
}

// TestReceivedLoadsAsTheFile: a part read through the blocks received is
// the part read from the file, for Load, LoadFlat and LoadPiece; a part
// of a grid takes only some of the file's blocks; the blocks' file is in
// the directory given and gone once closed.
func TestReceivedLoadsAsTheFile(t *testing.T) {
	cases := append(testModels(), struct {
		name string
		m    *model.Model
	}{"grid", generate.Potts(generate.GridOptions{Height: 60, Width: 60, Labels: 4, Rho: 1, Seed: 5})})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, path := reducedDDX(t, c.m)
			b, specs := announced(t, path, 3)
			l, err := PlanLayout(path, 3, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			copies := l.Copies()
			for w, spec := range specs {
				if err := spec.ReadableFile(); err != nil {
					t.Fatalf("the file is readable here: %v", err)
				}
				dir := t.TempDir()
				f := &fileFetch{t: t, b: b, path: path}
				rec, err := Receive(context.Background(), dir, spec, b.Sums, f.fetch)
				if err != nil {
					t.Fatal(err)
				}
				if filepath.Dir(rec.Path()) != dir || !strings.HasPrefix(filepath.Base(rec.Path()), "part-") {
					t.Fatalf("blocks kept in %s, not in %s", rec.Path(), dir)
				}
				fromFile := *spec
				spec.UseReceived(rec)
				for _, load := range []func(context.Context, *Spec) (any, error){
					func(ctx context.Context, s *Spec) (any, error) { return Load(ctx, s) },
					func(ctx context.Context, s *Spec) (any, error) { return LoadFlat(ctx, s) },
					func(ctx context.Context, s *Spec) (any, error) {
						var cs []int32
						for _, j := range l.Specs[w].Boundary {
							k, _ := indexOf(l.BoundaryVars, int(j))
							cs = append(cs, int32(len(copies[k])))
						}
						return LoadPiece(ctx, s, cs)
					},
				} {
					got, err := load(context.Background(), spec)
					if err != nil {
						t.Fatal(err)
					}
					want, err := load(context.Background(), &fromFile)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("part %d read through the blocks received differs from the file's", w)
					}
				}
				n, bytes := rec.Held()
				t.Logf("part %d: %d of the file's %d blocks received", w, n, len(b.Sums)/32)
				if c.name == "grid" && n >= len(b.Sums)/32 {
					t.Errorf("part %d took all %d blocks of the file", w, n)
				}
				if n != f.asked || bytes <= 0 {
					t.Errorf("%d blocks held (%d bytes), %d asked", n, bytes, f.asked)
				}
				if err := rec.Close(); err != nil {
					t.Fatal(err)
				}
				if es, _ := os.ReadDir(dir); len(es) != 0 {
					t.Errorf("%s holds %d files once closed", dir, len(es))
				}
			}
		})
	}
}

func indexOf(vars []int, v int) (int, bool) {
	for k, x := range vars {
		if x == v {
			return k, true
		}
	}
	return 0, false
}

// TestReceivedRefusesForgeries: block hashes that are not the announced
// digest's, a block changed, cut or lengthened, each fail with an error
// that says so; a spec without a digest, or with blocks out of bounds,
// cannot be received.
func TestReceivedRefusesForgeries(t *testing.T) {
	path := writeDDX(t, generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 3}))
	b, specs := announced(t, path, 2)
	sums := bytes.Clone(b.Sums)
	sums[40] ^= 1
	if _, err := Receive(context.Background(), t.TempDir(), specs[0], sums, nil); err == nil || !strings.Contains(err.Error(), "do not match the digest") {
		t.Errorf("changed hashes: %v", err)
	}
	if _, err := Receive(context.Background(), t.TempDir(), specs[0], b.Sums[:len(b.Sums)-32], nil); err == nil {
		t.Error("hashes of one block too few accepted")
	}
	for name, change := range map[string]func(int, []byte) []byte{
		"flipped":    func(_ int, d []byte) []byte { d[len(d)/2] ^= 4; return d },
		"cut":        func(_ int, d []byte) []byte { return d[:len(d)-1] },
		"lengthened": func(_ int, d []byte) []byte { return append(d, 0) },
	} {
		dir := t.TempDir()
		f := &fileFetch{t: t, b: b, path: path, change: change}
		rec, err := Receive(context.Background(), dir, specs[0], b.Sums, f.fetch)
		if err != nil {
			t.Fatal(err)
		}
		specs[0].UseReceived(rec)
		_, err = Load(context.Background(), specs[0])
		if err == nil || !strings.Contains(err.Error(), "forged or garbled") {
			t.Errorf("%s blocks: %v", name, err)
		}
		rec.Close()
		if es, _ := os.ReadDir(dir); len(es) != 0 {
			t.Errorf("%s blocks: %d files left", name, len(es))
		}
	}
	bare := *specs[1]
	bare.Root = nil
	if _, err := Receive(context.Background(), t.TempDir(), &bare, b.Sums, nil); err == nil {
		t.Error("a spec without a digest received")
	}
	noBlocks := *specs[1]
	noBlocks.BlockSize = 0
	if _, err := Receive(context.Background(), t.TempDir(), &noBlocks, b.Sums, nil); err == nil {
		t.Error("a spec with blocks of 0 bytes received")
	}
	data, err := specs[1].Encode()
	if err != nil {
		t.Fatal(err)
	}
	tail := len(data) - 32 - 4
	for _, bs := range []uint32{0, MinBlockSize - 1, MaxBlockSize + 1} {
		bad := bytes.Clone(data)
		bad[tail], bad[tail+1], bad[tail+2], bad[tail+3] = byte(bs), byte(bs>>8), byte(bs>>16), byte(bs>>24)
		if _, err := DecodeSpec(bad); err == nil {
			t.Errorf("blocks of %d bytes accepted", bs)
		}
	}
	if _, err := hashFile(path, 100); err == nil {
		t.Error("blocks of 100 bytes hashed")
	}
}

// TestStateWhicheverPartsTravel: a part's state saved by a worker that
// received its part reads back for a worker that reads the file, and the
// other way round (a run resumed with another --parts), while another
// part's spec is still refused.
func TestStateWhicheverPartsTravel(t *testing.T) {
	path := writeDDX(t, generate.Potts(generate.GridOptions{Height: 12, Width: 12, Labels: 4, Rho: 1, Seed: 3}))
	_, specs := announced(t, path, 2)
	shipped, err := specs[1].Encode() // with the digest and Receive set
	if err != nil {
		t.Fatal(err)
	}
	bare := *specs[1]
	bare.Root, bare.BlockSize, bare.Receive = nil, 0, false
	plain, err := bare.Encode()
	if err != nil {
		t.Fatal(err)
	}
	other, err := specs[0].Encode()
	if err != nil {
		t.Fatal(err)
	}
	st, at, lens := testState()
	for _, c := range []struct {
		wrote, read []byte
		ok          bool
	}{{shipped, plain, true}, {plain, shipped, true}, {shipped, other, false}} {
		dir := t.TempDir()
		at.Spec = c.wrote
		ref, err := WriteState(dir, at, st)
		if err != nil {
			t.Fatal(err)
		}
		at.Spec = c.read
		if _, err := ReadState(context.Background(), dir, ref, at, lens); (err == nil) != c.ok {
			t.Errorf("read with another spec's form: %v, want ok %v", err, c.ok)
		}
	}
}
