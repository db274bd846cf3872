package shard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ddrun/ddrun/model/indexed"
)

// A worker that cannot open the model file at its spec's Path (it shares
// no filesystem with the coordinator) receives the file's bytes instead,
// in blocks, by whatever transport its caller has (a Fetch). The
// coordinator hashes the file once, block by block (HashBlocks), and
// announces in every spec the root digest of those hashes (Spec.Root, the
// sha256 of the blocks' sha256s). The worker first gets the block hashes
// and checks them against the root, then reads its part as it would read
// the file (Load, LoadPiece) through a Received: each block its reads
// touch is fetched, checked against its hash and written into a file in
// the worker's own directory before it is used. Only the blocks the part
// reads travel (its factor records and payloads, its variables'
// unaries, the file's cardinalities and index); neither side holds more
// than a few blocks in memory.

// shipMagic starts a spec's optional tail: BlockSize and Root.
const shipMagic = "SHIP"

// Bounds on a shipped file's block size, and the default.
const (
	MinBlockSize = 4 << 10
	MaxBlockSize = 4 << 20
	// ShipBlockSize is a block's size: with its envelope it stays below
	// NATS's default maximum payload (1 MiB), so that a block travels as
	// one message.
	ShipBlockSize = 256 << 10
)

// readAhead is how many blocks after a missed one a Received fetches with
// it when the block before it is held already (a sequential read).
const readAhead = 15

// Blocks is a file's digest as shipped parts use it: the sha256 of every
// block of BlockSize bytes (the last one shorter), concatenated in Sums,
// and Root, the sha256 of Sums. It takes 32 bytes per block.
type Blocks struct {
	Size      int64
	BlockSize int
	Sums      []byte
	Root      []byte
}

// NumBlocks is the number of blocks of BlockSize bytes in size bytes.
func NumBlocks(size int64, blockSize int) int {
	return int((size + int64(blockSize) - 1) / int64(blockSize))
}

// HashBlocks reads a file of size bytes from r once, blockSize bytes at a
// time, and returns its Blocks.
func HashBlocks(ctx context.Context, r io.ReaderAt, size int64, blockSize int) (*Blocks, error) {
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("shard: blocks of %d bytes, not in [%d,%d]", blockSize, MinBlockSize, MaxBlockSize)
	}
	b := &Blocks{Size: size, BlockSize: blockSize, Sums: make([]byte, 0, sha256.Size*NumBlocks(size, blockSize))}
	buf := make([]byte, blockSize)
	for k := range NumBlocks(size, blockSize) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		off, n := b.Block(k)
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return nil, fmt.Errorf("shard: hashing the model file: %w", err)
		}
		sum := sha256.Sum256(buf[:n])
		b.Sums = append(b.Sums, sum[:]...)
	}
	root := sha256.Sum256(b.Sums)
	b.Root = root[:]
	return b, nil
}

// Announce sets every spec of l to name b's root: a worker that cannot
// read the file may then receive it. b must be the digest of l's file.
func (b *Blocks) Announce(l *Layout) error {
	for w := range l.Specs {
		if l.Specs[w].Size != b.Size {
			return fmt.Errorf("shard: worker %d's spec names a file of %d bytes, the digest is of %d", w, l.Specs[w].Size, b.Size)
		}
		l.Specs[w].BlockSize, l.Specs[w].Root = b.BlockSize, b.Root
	}
	return nil
}

// Block returns the offset and length of block k of b's file.
func (b *Blocks) Block(k int) (off int64, n int) { return blockAt(b.Size, b.BlockSize, k) }

// blockAt returns the offset and length of block k of a file of size
// bytes in blocks of blockSize.
func blockAt(size int64, blockSize, k int) (off int64, n int) {
	off = int64(k) * int64(blockSize)
	return off, int(min(int64(blockSize), size-off))
}

// ReadableFile reports why the worker cannot read its part from the file
// at the spec's Path (nil: it can): it cannot open it, or the file there
// is not the one the coordinator planned (another size or structure
// checksum, which the file's trailer holds under its own checksum).
func (s *Spec) ReadableFile() error {
	f, size, err := openSized(s.Path, "shard")
	if err != nil {
		return err
	}
	defer f.Close()
	if size != s.Size {
		return fmt.Errorf("shard: %s has %d bytes, the coordinator planned a file of %d", s.Path, size, s.Size)
	}
	sc, err := indexed.OpenScan(f, size, s.Path, indexed.ReadOptions{MaxEntries: s.MaxEntries, Ranges: true})
	if err != nil {
		return err
	}
	if sc.StructureCRC() != s.StructureCRC {
		return fmt.Errorf("shard: %s: structure checksum %08x, the coordinator planned %08x", s.Path, sc.StructureCRC(), s.StructureCRC)
	}
	return nil
}

// NumBlocks is the number of blocks of the spec's file, when its spec
// announces a digest.
func (s *Spec) NumBlocks() (int, error) {
	if len(s.Root) != sha256.Size || s.BlockSize < MinBlockSize || s.BlockSize > MaxBlockSize || s.Size < 0 {
		return 0, errors.New("shard: the part's spec announces no digest of its file: it cannot be received")
	}
	return NumBlocks(s.Size, s.BlockSize), nil
}

// CheckSums checks the block hashes a worker received for its spec: as
// many as the spec's file has blocks, and their sha256 is the spec's
// Root.
func (s *Spec) CheckSums(sums []byte) error {
	n, err := s.NumBlocks()
	if err != nil {
		return err
	}
	if len(sums) != sha256.Size*n {
		return fmt.Errorf("shard: %d bytes of block hashes for a file of %d blocks", len(sums), n)
	}
	if root := sha256.Sum256(sums); !bytes.Equal(root[:], s.Root) {
		return fmt.Errorf("shard: the block hashes received do not match the digest %x the part's spec announces (forged or garbled)", s.Root[:8])
	}
	return nil
}

// Fetch asks for blocks of the spec's file (indices, increasing) and calls
// got with each as it arrives, until every one has arrived or got fails
// (its error is Fetch's). got must not be called concurrently.
type Fetch func(ctx context.Context, blocks []int, got func(k int, data []byte) error) error

// Received is a worker's copy of the blocks of its part's file that its
// reads needed: a file of its own directory (named after the digest),
// filled as the reads go, every block checked against its hash before it
// is written. It is an io.ReaderAt over the whole file (UseReceived).
type Received struct {
	ctx   context.Context
	spec  *Spec
	sums  []byte
	fetch Fetch

	mu    sync.Mutex
	f     *os.File
	slot  []int32 // slot[k]: where block k is in f (in blocks), -1: not held
	held  int
	bytes int64
}

// Receive makes the Received of spec's file in dir (created when
// missing, 0700): sums are the block hashes received (checked against
// the spec's Root), fetch gets blocks. Reads through it fail once ctx
// ends. Close removes its file.
func Receive(ctx context.Context, dir string, spec *Spec, sums []byte, fetch Fetch) (*Received, error) {
	if err := spec.CheckSums(sums); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("shard: no state directory to receive the part's file in")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("shard: receiving a part: %w", err)
	}
	// The name comes from the digest only, never from the message's path.
	f, err := os.CreateTemp(dir, strings.Replace(ReceivedName, "*", hex.EncodeToString(spec.Root[:12])+"-*", 1))
	if err != nil {
		return nil, fmt.Errorf("shard: receiving a part: %w", err)
	}
	slot := make([]int32, NumBlocks(spec.Size, spec.BlockSize))
	for k := range slot {
		slot[k] = -1
	}
	return &Received{ctx: ctx, spec: spec, sums: sums, fetch: fetch, f: f, slot: slot}, nil
}

// Path is the file the blocks are kept in.
func (r *Received) Path() string { return r.f.Name() }

// Held returns the blocks received so far and their bytes.
func (r *Received) Held() (blocks int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, r.bytes
}

// Close closes and removes the file of blocks.
func (r *Received) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.f.Close()
	if rerr := os.Remove(r.f.Name()); err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	return err
}

func (r *Received) block(k int) (off int64, n int) { return blockAt(r.spec.Size, r.spec.BlockSize, k) }

// ReadAt reads len(p) bytes of the spec's file at off, fetching the
// blocks it does not hold yet.
func (r *Received) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > r.spec.Size {
		return 0, fmt.Errorf("shard: read at %d of a file of %d bytes", off, r.spec.Size)
	}
	want := min(int64(len(p)), r.spec.Size-off)
	if want == 0 {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	bs := int64(r.spec.BlockSize)
	first, last := int(off/bs), int((off+want-1)/bs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ensure(first, last); err != nil {
		return 0, err
	}
	n := 0
	for k := first; k <= last; k++ {
		boff, bn := r.block(k)
		from := max(off, boff)
		to := min(off+want, boff+int64(bn))
		m, err := r.f.ReadAt(p[n:n+int(to-from)], int64(r.slot[k])*bs+(from-boff))
		n += m
		if err != nil {
			return n, fmt.Errorf("shard: reading the part's received blocks: %w", err)
		}
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// ensure fetches the blocks first..last that r does not hold, and the
// next readAhead blocks when the read follows a block already held.
func (r *Received) ensure(first, last int) error {
	end := last
	if first == 0 || r.slot[first-1] >= 0 {
		end = min(len(r.slot)-1, last+readAhead)
	}
	var missing []int
	for k := first; k <= end; k++ {
		if r.slot[k] < 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	err := r.fetch(r.ctx, missing, r.put)
	for k := first; err == nil && k <= last; k++ {
		if r.slot[k] < 0 {
			err = fmt.Errorf("shard: block %d of the part's file did not arrive", k)
		}
	}
	return err
}

// put checks block k against its hash and writes it into r's file.
func (r *Received) put(k int, data []byte) error {
	if k < 0 || k >= len(r.slot) {
		return fmt.Errorf("shard: block %d of a file of %d blocks", k, len(r.slot))
	}
	if r.slot[k] >= 0 {
		return nil // a repeat
	}
	if _, n := r.block(k); len(data) != n {
		return fmt.Errorf("shard: block %d of the part's file: %d bytes received, it has %d (forged or garbled): refused", k, len(data), n)
	}
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], r.sums[sha256.Size*k:sha256.Size*(k+1)]) {
		return fmt.Errorf("shard: block %d of the part's file: its sha256 is not the one the coordinator announced (forged or garbled): refused", k)
	}
	if _, err := r.f.WriteAt(data, int64(r.held)*int64(r.spec.BlockSize)); err != nil {
		return fmt.Errorf("shard: keeping a received block: %w", err)
	}
	r.slot[k] = int32(r.held)
	r.held++
	r.bytes += int64(len(data))
	return nil
}

// partIdentity is a spec's wire form without how its part travels (Root,
// BlockSize, Receive): a part's state is the same whether its worker read
// the file or received it (Layout.Digest leaves them out too).
func partIdentity(wire []byte) []byte {
	s, err := DecodeSpec(wire)
	if err != nil || len(s.Root) == 0 {
		return wire
	}
	s.Root, s.BlockSize, s.Receive = nil, 0, false
	if b, err := s.Encode(); err == nil {
		return b
	}
	return wire
}

// UseReceived has the spec's part read from r instead of the file at its
// Path (Load, LoadFlat, LoadPiece).
func (s *Spec) UseReceived(r *Received) { s.src = r }

// open returns what the part is read from, its size, and what to call
// when done with it.
func (s *Spec) open() (io.ReaderAt, int64, func(), error) {
	if s.src != nil {
		return s.src, s.Size, func() {}, nil
	}
	f, size, err := openRegular(s.Path, "shard: the model file") // its errors hold no path
	if err != nil {
		return nil, 0, nil, err
	}
	return f, size, func() { f.Close() }, nil
}

// ReceivedName is the pattern (filepath.Match) of the files Receive
// creates in its directory.
const ReceivedName = "part-*.blocks"
