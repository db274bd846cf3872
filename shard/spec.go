package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Spec is one worker's part of a sharded job: where the model file is, the
// range of factors it holds, and what it must know of the rest (its
// boundary variables and their degrees in the whole decomposition). It is
// O(the worker's boundary) bytes.
type Spec struct {
	Path string
	// Size and StructureCRC bind the spec to the file the coordinator
	// planned (its trailer's structure checksum): a worker that finds
	// another file refuses the part.
	Size         int64
	StructureCRC uint32
	NumVars      int
	// From and To: the worker's factors [From, To), whose first record
	// starts at byte Pos of the file.
	From, To int
	Pos      int64
	// Boundary lists the worker's boundary variables (increasing) and
	// Degree their number of slaves over all workers.
	Boundary []int64
	Degree   []int32
	// Isolated lists variables in no factor that the worker holds.
	Isolated []int64
	// ReplicaEntries is the part's replica entries (a check).
	ReplicaEntries int
	// MaxEntries bounds the part's states and payload entries (one
	// process's budget), not the model's totals.
	MaxEntries int
	// BlockSize and Root, when Root is set, let a worker that cannot read
	// Path receive the file's bytes over the transport instead (ship.go):
	// Root is the sha256 of the file's blocks' sha256s (Blocks.Root).
	BlockSize int
	Root      []byte
	// Receive, with Root: the worker receives the file's bytes even when
	// it could read Path (a run that ships every part).
	Receive bool

	// src, when set, is where the part is read from instead of Path
	// (Received, UseReceived): not on the wire.
	src io.ReaderAt
}

// specMagic starts a spec's wire form (version 1).
const specMagic = "DDSPEC01"

// Encode returns the spec's wire form: little-endian fixed-size fields,
// and each list as its length followed by its entries.
func (s *Spec) Encode() ([]byte, error) {
	if len(s.Degree) != len(s.Boundary) {
		return nil, fmt.Errorf("shard: spec with %d boundary variables and %d degrees", len(s.Boundary), len(s.Degree))
	}
	b := make([]byte, 0, 96+len(s.Path)+12*len(s.Boundary)+8*len(s.Isolated))
	le := binary.LittleEndian
	b = append(b, specMagic...)
	b = le.AppendUint32(b, uint32(len(s.Path)))
	b = append(b, s.Path...)
	b = le.AppendUint64(b, uint64(s.Size))
	b = le.AppendUint32(b, s.StructureCRC)
	for _, v := range []int{s.NumVars, s.From, s.To, int(s.Pos), s.ReplicaEntries, s.MaxEntries} {
		b = le.AppendUint64(b, uint64(v))
	}
	b = le.AppendUint32(b, uint32(len(s.Boundary)))
	for k, v := range s.Boundary {
		b = le.AppendUint64(b, uint64(v))
		b = le.AppendUint32(b, uint32(s.Degree[k]))
	}
	b = le.AppendUint32(b, uint32(len(s.Isolated)))
	for _, v := range s.Isolated {
		b = le.AppendUint64(b, uint64(v))
	}
	if len(s.Root) > 0 {
		if len(s.Root) != sha256.Size {
			return nil, fmt.Errorf("shard: spec with a root digest of %d bytes", len(s.Root))
		}
		b = append(b, shipMagic...)
		b = append(b, boolByte(s.Receive))
		b = le.AppendUint32(b, uint32(s.BlockSize))
		b = append(b, s.Root...)
	}
	return b, nil
}

// specReader reads a spec's wire form, failing instead of reading past its
// end or setting aside more than the bytes left can hold.
type specReader struct {
	b   []byte
	err error
}

func (r *specReader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = errors.New("shard: a part's spec ends early")
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *specReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *specReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

// int reads a u64 that must be a non-negative int.
func (r *specReader) int(what string) int {
	v := r.u64()
	if r.err == nil && v > math.MaxInt64 {
		r.err = fmt.Errorf("shard: a part's spec: %s %d out of range", what, v)
	}
	return int(v)
}

// count reads a list's length, which must fit in the bytes left at size
// bytes an entry.
func (r *specReader) count(what string, size int) int {
	n := int(r.u32())
	if r.err == nil && n > len(r.b)/size {
		r.err = fmt.Errorf("shard: a part's spec: %d %s in %d bytes", n, what, len(r.b))
		return 0
	}
	return n
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// DecodeSpec reads a spec's wire form (Encode's).
func DecodeSpec(data []byte) (*Spec, error) {
	r := &specReader{b: data}
	if string(r.take(len(specMagic))) != specMagic {
		return nil, errors.New("shard: not a part's spec (bad magic)")
	}
	s := &Spec{}
	s.Path = string(r.take(r.count("path bytes", 1)))
	s.Size = int64(r.int("size"))
	s.StructureCRC = r.u32()
	s.NumVars, s.From, s.To = r.int("variables"), r.int("first factor"), r.int("end factor")
	s.Pos, s.ReplicaEntries, s.MaxEntries = int64(r.int("position")), r.int("replica entries"), r.int("max entries")
	nb := r.count("boundary variables", 12)
	s.Boundary, s.Degree = make([]int64, nb), make([]int32, nb)
	for k := range nb {
		s.Boundary[k] = int64(r.int("boundary variable"))
		s.Degree[k] = int32(r.u32())
	}
	ni := r.count("isolated variables", 8)
	s.Isolated = make([]int64, ni)
	for k := range ni {
		s.Isolated[k] = int64(r.int("isolated variable"))
	}
	if r.err == nil && len(r.b) > 0 && bytes.HasPrefix(r.b, []byte(shipMagic)) {
		r.take(len(shipMagic))
		switch flag := r.take(1)[0]; flag {
		case 0, 1:
			s.Receive = flag == 1
		default:
			return nil, fmt.Errorf("shard: a part's spec: receive flag %d", flag)
		}
		s.BlockSize = int(r.u32())
		s.Root = bytes.Clone(r.take(sha256.Size))
		if r.err == nil && (s.BlockSize < MinBlockSize || s.BlockSize > MaxBlockSize) {
			return nil, fmt.Errorf("shard: a part's spec: blocks of %d bytes, not in [%d,%d]", s.BlockSize, MinBlockSize, MaxBlockSize)
		}
	}
	switch {
	case r.err != nil:
		return nil, r.err
	case len(r.b) != 0:
		return nil, fmt.Errorf("shard: %d bytes after a part's spec", len(r.b))
	}
	return s, nil
}

// EncodeSpecs returns every worker's spec in its wire form (Encode), in
// the order of the workers: what a sharded job ships to them.
func (l *Layout) EncodeSpecs() ([][]byte, error) {
	specs := make([][]byte, len(l.Specs))
	for w := range l.Specs {
		b, err := l.Specs[w].Encode()
		if err != nil {
			return nil, fmt.Errorf("worker %d: %w", w, err)
		}
		specs[w] = b
	}
	return specs, nil
}

// Digest is the sha256 of the layout's specs (each bound to the model file
// by its size and structure checksum): a sharded job's identity, with its
// settings, for its checkpoints. How the parts reach the workers (Root)
// is not part of it: a job resumes whether its parts travel or not.
func (l *Layout) Digest() ([]byte, error) {
	h := sha256.New()
	for w := range l.Specs {
		b, err := l.Specs[w].Encode()
		if err != nil {
			return nil, fmt.Errorf("worker %d: %w", w, err)
		}
		b = partIdentity(b)
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	return h.Sum(nil), nil
}

// UnshardableError is a model that a sharded run cannot take as it is (a
// forbidden state, a factor over fewer than two variables, fewer factors
// than workers), though the whole model could run: a front end may run it
// unsharded instead.
type UnshardableError struct{ Err error }

func (e *UnshardableError) Error() string { return e.Err.Error() }
func (e *UnshardableError) Unwrap() error { return e.Err }
