package shard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ddrun/ddrun/consensus"
)

// A state file holds one worker's part state of a sharded run after one
// iteration (consensus.ShardPartState): what the worker needs to continue
// from there once it has read its part from the model file again. Workers
// write their own into a directory they all see, so that a checkpoint of
// the coordinator references them by name, size and sha256 (StateRef) and
// holds no part of the model.
//
// Layout, little-endian: the magic, then the header (the job's length and
// bytes, epoch, iteration, part, the sha256 of the part's spec, the
// lengths of lambda, nu, mu and the decoded states, and whether the best
// states follow), then lambda, nu and mu (float64), the decoded states and
// the best states (int32), and last the sha256 of everything before it.

// stateMagic starts a state file (version 1).
const stateMagic = "DDSTATE1"

// maxJobLen bounds the job name a state file's header may claim.
const maxJobLen = 255

// StateAt says whose state a file is: the job (its base name, the same
// across epochs), the epoch that wrote it, the iteration after which it
// was taken, the part, and the part's spec (the file records the sha256
// of its identity: partIdentity).
type StateAt struct {
	Job   string
	Epoch uint64
	Iter  int
	Part  int
	Spec  []byte
}

// StateRef references a state file in the state directory; it is what a
// worker reports and the coordinator's checkpoint keeps.
type StateRef struct {
	Name string
	Size int64
	Sum  [sha256.Size]byte
	Iter int
	Part int
}

// stateRefMagic starts a StateRef's wire form.
const stateRefMagic = "DDSREF01"

// Encode returns the reference's wire form.
func (r StateRef) Encode() []byte {
	le := binary.LittleEndian
	b := append([]byte(stateRefMagic), byte(len(r.Name)))
	b = append(b, r.Name...)
	b = le.AppendUint64(b, uint64(r.Size))
	b = append(b, r.Sum[:]...)
	b = le.AppendUint64(b, uint64(r.Iter))
	return le.AppendUint32(b, uint32(r.Part))
}

// DecodeStateRef reads a reference's wire form (Encode's) and checks its
// name.
func DecodeStateRef(data []byte) (StateRef, error) {
	var r StateRef
	rd := &specReader{b: data}
	if string(rd.take(len(stateRefMagic))) != stateRefMagic {
		return r, errors.New("shard: not a state reference (bad magic)")
	}
	r.Name = string(rd.take(int(rd.take(1)[0])))
	r.Size = int64(rd.int("size"))
	copy(r.Sum[:], rd.take(sha256.Size))
	r.Iter = rd.int("iteration")
	r.Part = int(rd.u32())
	switch {
	case rd.err != nil:
		return StateRef{}, rd.err
	case len(rd.b) != 0:
		return StateRef{}, fmt.Errorf("shard: %d bytes after a state reference", len(rd.b))
	}
	if err := checkStateName(r.Name); err != nil {
		return StateRef{}, err
	}
	return r, nil
}

// StateName is the file name of a state: job, epoch, part and iteration.
func StateName(at StateAt) string {
	return fmt.Sprintf("%s-e%d-p%d-i%d.ddstate", at.Job, at.Epoch, at.Part, at.Iter)
}

// checkStateName accepts only the names StateName makes: one path element
// of letters, digits, '-', '_' and '.', not starting with a dot.
func checkStateName(name string) error {
	if !plainName(name) || !strings.HasSuffix(name, ".ddstate") {
		return errors.New("shard: a state file name that is not one a worker writes")
	}
	return nil
}

func checkJob(job string) error {
	if job == "" || len(job) > maxJobLen-64 || strings.ContainsAny(job, "/\\.") || checkStateName(job+".ddstate") != nil {
		return errors.New("shard: a job name that cannot name a state file")
	}
	return nil
}

// WriteState writes st into dir (created when missing) as the state at
// at, atomically: a temporary file in dir, fsync, rename, fsync of dir. A
// crash leaves the whole file or none (and perhaps a .tmp file).
func WriteState(dir string, at StateAt, st *consensus.ShardPartState) (StateRef, error) {
	if err := checkJob(at.Job); err != nil {
		return StateRef{}, err
	}
	if st.Best != nil && len(st.Best) != len(st.X) {
		return StateRef{}, fmt.Errorf("shard: a state of %d decoded and %d best states", len(st.X), len(st.Best))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return StateRef{}, fmt.Errorf("shard: the state directory: %w", pathless(err))
	}
	ref := StateRef{Name: StateName(at), Iter: at.Iter, Part: at.Part}
	tmp, err := os.CreateTemp(dir, ".tmp-"+ref.Name+"-*")
	if err != nil {
		return StateRef{}, fmt.Errorf("shard: the state file: %w", pathless(err))
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	defer tmp.Close()
	whole := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, whole), 1<<16)
	inner := sha256.New()
	w := io.MultiWriter(bw, inner)
	if err := encodeState(w, at, st); err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	bw.Write(inner.Sum(nil))
	if err := bw.Flush(); err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	if err := tmp.Sync(); err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	fi, err := tmp.Stat()
	if err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	if err := tmp.Close(); err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ref.Name)); err != nil {
		return StateRef{}, fmt.Errorf("shard: writing %s: %w", ref.Name, pathless(err))
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	ref.Size = fi.Size()
	copy(ref.Sum[:], whole.Sum(nil))
	return ref, nil
}

// encodeState writes the state's magic, header and arrays (not its
// checksum).
func encodeState(w io.Writer, at StateAt, st *consensus.ShardPartState) error {
	le := binary.LittleEndian
	b := append([]byte(stateMagic), byte(len(at.Job)))
	b = append(b, at.Job...)
	b = le.AppendUint64(b, at.Epoch)
	b = le.AppendUint64(b, uint64(at.Iter))
	b = le.AppendUint32(b, uint32(at.Part))
	spec := sha256.Sum256(partIdentity(at.Spec))
	b = append(b, spec[:]...)
	for _, n := range []int{len(st.Lambda), len(st.Nu), len(st.Mu), len(st.X)} {
		b = le.AppendUint64(b, uint64(n))
	}
	if st.Best != nil {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, a := range [][]float64{st.Lambda, st.Nu, st.Mu} {
		for _, v := range a {
			if len(buf)+8 > cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
	}
	for _, a := range [][]int32{st.X, st.Best} {
		for _, v := range a {
			if len(buf)+4 > cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = le.AppendUint32(buf, uint32(v))
		}
	}
	return flush()
}

// StateLens are the lengths a part's state must have (see
// consensus.Worker.ShardStateLens).
type StateLens struct{ Lambda, Nu, Mu, X int }

// stateHeaderLen is the header's length after the job name.
const stateHeaderLen = 8 + 8 + 4 + sha256.Size + 4*8 + 1

// stateSize returns the size of a state file of these lengths.
func stateSize(job string, lens StateLens, best bool) int64 {
	n := int64(len(stateMagic)+1+len(job)+stateHeaderLen) + 8*int64(lens.Lambda+lens.Nu+lens.Mu) + 4*int64(lens.X) + sha256.Size
	if best {
		n += 4 * int64(lens.X)
	}
	return n
}

// ReadState reads the state file ref names in dir (a regular file directly
// in it: OpenConfined) and checks it before
// using it: its size against ref and against the lengths the part's state
// has (before anything is allocated), its header against at (job,
// iteration, part and the spec's sha256; any epoch), its own checksum and
// its sha256 against ref. Its values are checked by
// consensus.Worker.RestoreShard.
func ReadState(ctx context.Context, dir string, ref StateRef, at StateAt, lens StateLens) (*consensus.ShardPartState, error) {
	if err := checkStateName(ref.Name); err != nil {
		return nil, err
	}
	if err := checkJob(at.Job); err != nil {
		return nil, err
	}
	f, size, err := OpenConfined(dir, ref.Name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size != ref.Size {
		return nil, errors.New("shard: the state file's size differs from the size the checkpoint recorded")
	}
	if ref.Iter != at.Iter || ref.Part != at.Part {
		return nil, fmt.Errorf("shard: the state file: the reference is to part %d after iteration %d, want part %d after %d", ref.Part, ref.Iter, at.Part, at.Iter)
	}
	whole := sha256.New()
	st, err := decodeState(bufio.NewReaderSize(io.TeeReader(f, whole), 1<<16), size, at, lens)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(whole.Sum(nil), ref.Sum[:]) {
		return nil, errors.New("shard: the state file's sha256 differs from the checkpoint's record")
	}
	return st, ctx.Err()
}

// openSized opens path and returns its size; its errors are prefixed by
// what (Load, Plan and ReadState each name what they open).
func openSized(path, what string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	return f, fi.Size(), nil
}

// errStateShort is a state file that ends early.
var errStateShort = errors.New("shard: state file ends early")

// decodeState reads a state file of size bytes from r (all of it), whose
// header must match at and lens.
func decodeState(r io.Reader, size int64, at StateAt, lens StateLens) (*consensus.ShardPartState, error) {
	if size != stateSize(at.Job, lens, false) && size != stateSize(at.Job, lens, true) {
		return nil, errors.New("shard: the state file's size in bytes is not one of this part's")
	}
	inner := sha256.New()
	tr := io.TeeReader(r, inner)
	head := make([]byte, len(stateMagic)+1+len(at.Job)+stateHeaderLen) // size checked above
	if _, err := io.ReadFull(tr, head); err != nil {
		return nil, errStateShort
	}
	le := binary.LittleEndian
	if string(head[:len(stateMagic)]) != stateMagic {
		return nil, errors.New("shard: not a state file (bad magic)")
	}
	h := head[len(stateMagic):]
	if int(h[0]) != len(at.Job) || string(h[1:1+len(at.Job)]) != at.Job {
		return nil, errors.New("shard: a state file of another job")
	}
	h = h[1+len(at.Job):]
	iter, part := le.Uint64(h[8:]), le.Uint32(h[16:])
	spec := sha256.Sum256(partIdentity(at.Spec))
	var got StateLens
	got.Lambda, got.Nu, got.Mu, got.X = int(le.Uint64(h[52:])), int(le.Uint64(h[60:])), int(le.Uint64(h[68:])), int(le.Uint64(h[76:]))
	best := h[84]
	switch {
	case iter != uint64(at.Iter) || part != uint32(at.Part):
		return nil, fmt.Errorf("shard: the state of part %d after iteration %d, want part %d after %d", part, iter, at.Part, at.Iter)
	case !bytes.Equal(h[20:52], spec[:]):
		return nil, errors.New("shard: a state file of another part (its spec's sha256 differs)")
	case got != lens || best > 1:
		return nil, fmt.Errorf("shard: a state of %d/%d/%d/%d entries, this part's has %d/%d/%d/%d", got.Lambda, got.Nu, got.Mu, got.X, lens.Lambda, lens.Nu, lens.Mu, lens.X)
	case size != stateSize(at.Job, lens, best == 1):
		return nil, errors.New("shard: the state file's size in bytes is not the one its header says")
	}
	st := &consensus.ShardPartState{PartState: consensus.PartState{Lambda: make([]float64, lens.Lambda), Nu: make([]float64, lens.Nu), Mu: make([]float64, lens.Mu)},
		X: make([]int32, lens.X)}
	if best == 1 {
		st.Best = make([]int32, lens.X)
	}
	if err := readFloats(tr, st.Lambda, st.Nu, st.Mu); err != nil {
		return nil, err
	}
	if err := readInt32s(tr, st.X, st.Best); err != nil {
		return nil, err
	}
	want := inner.Sum(nil)
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, errStateShort
	}
	if !bytes.Equal(sum[:], want) {
		return nil, errors.New("shard: state file damaged (its checksum does not match)")
	}
	return st, nil // its values: consensus.Worker.RestoreShard
}

// readFloats and readInt32s fill arrays, in order, from little-endian
// values in r; a short read is errStateShort.
func readFloats(r io.Reader, arrays ...[]float64) error {
	return readLE(r, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }, arrays)
}

func readInt32s(r io.Reader, arrays ...[]int32) error {
	return readLE(r, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }, arrays)
}

// readLE reads size-byte values through a 64 KiB buffer, decoding each
// with dec.
func readLE[T any](r io.Reader, size int, dec func([]byte) T, arrays [][]T) error {
	buf := make([]byte, 1<<16)
	for _, a := range arrays {
		for i := 0; i < len(a); {
			n := min(len(a)-i, len(buf)/size)
			if _, err := io.ReadFull(r, buf[:size*n]); err != nil {
				return errStateShort
			}
			for k := range n {
				a[i+k] = dec(buf[size*k:])
			}
			i += n
		}
	}
	return nil
}

// StateFiles keeps sharded parts' states as state files in directory Dir,
// a worker's own (Dirs.State; never one a message names)
// (cluster.WorkerOptions.ShardStates). After each save it removes the
// part's older files of the job but the newest keepStates (the file just
// written, then by modification time): a coordinator keeps at most two
// checkpoints, plus the one being written. Not by iteration: the files of
// an earlier run of a job of the same name in the same directory (a job
// that ended at a later iteration) would outrank a new run's and have its
// files removed as they are written.
type StateFiles struct{ Dir string }

// keepStates is how many state files of one part StateFiles keeps.
const keepStates = 3

// Save writes st (WriteState) and returns its StateRef's wire form.
func (s StateFiles) Save(_ context.Context, at StateAt, st *consensus.ShardPartState) ([]byte, error) {
	if s.Dir == "" {
		return nil, errNoDirs
	}
	ref, err := WriteState(s.Dir, at, st)
	if err != nil {
		return nil, err
	}
	pruneStates(s.Dir, at, ref.Name)
	return ref.Encode(), nil
}

// Load reads the state ref names (ReadState), for worker w's part.
func (s StateFiles) Load(ctx context.Context, at StateAt, ref []byte, w *consensus.Worker) (*consensus.ShardPartState, error) {
	if s.Dir == "" {
		return nil, errNoDirs
	}
	r, err := DecodeStateRef(ref)
	if err != nil {
		return nil, err
	}
	var lens StateLens
	lens.Lambda, lens.Nu, lens.Mu, lens.X = w.ShardStateLens()
	return ReadState(ctx, s.Dir, r, at, lens)
}

// pruneStates removes the part's state files of the job but the newest
// keepStates: the one just written (name) and the most recently modified
// others; failures are left for the next save.
func pruneStates(dir string, at StateAt, name string) {
	names, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-e*-p%d-i*.ddstate", at.Job, at.Part)))
	if err != nil || len(names) <= keepStates {
		return
	}
	type file struct {
		name string
		mod  time.Time
		iter uint64
	}
	var files []file
	for _, n := range names {
		var epoch, iter uint64
		var part int
		base := filepath.Base(n)
		rest := strings.TrimPrefix(base, at.Job+"-")
		if _, err := fmt.Sscanf(rest, "e%d-p%d-i%d.ddstate", &epoch, &part, &iter); err != nil || part != at.Part || base == name {
			continue // another job's whose name starts alike, or the one just written
		}
		fi, err := os.Stat(n)
		if err != nil {
			continue
		}
		files = append(files, file{n, fi.ModTime(), iter})
	}
	slices.SortFunc(files, func(a, b file) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return int(min(max(int64(b.iter)-int64(a.iter), -1), 1))
	})
	for _, f := range files[min(keepStates-1, len(files)):] {
		os.Remove(f.name)
	}
}
