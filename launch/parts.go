package launch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// Parts is how the workers of a sharded run get their parts of the
// indexed model file (docs/sharded.md, "How parts reach the workers"):
//
//   - PartsFile: each worker reads its part's byte ranges of the file at
//     the coordinator's path, which it must see (a shared volume);
//   - PartsNATS: each worker receives the blocks of the file its part
//     reads over the transport, from the coordinator, into its own state
//     directory (package shard's Receive), checked against the digest
//     its spec announces;
//   - PartsAuto (the default): PartsFile for a worker that can open the
//     file at the coordinator's path and finds there the file planned
//     (its size and structure checksum), PartsNATS for the others.
//
// A --local run's workers read the file (Sharded.Local: PartsAuto is
// PartsFile there). Every mode but PartsFile costs the coordinator one
// pass over the file
// to hash its blocks (32 bytes kept per 256 KiB block).
type Parts string

// The ways parts reach workers.
const (
	PartsAuto Parts = "auto"
	PartsFile Parts = "file"
	PartsNATS Parts = "nats"
)

// ParseParts reads a --parts value ("" is PartsAuto).
func ParseParts(s string) (Parts, error) {
	switch p := Parts(s); p {
	case "":
		return PartsAuto, nil
	case PartsAuto, PartsFile, PartsNATS:
		return p, nil
	}
	return "", inputf("--parts %q: want file, nats or auto", s)
}

// Subjects of the parts' blocks, beside the job protocols' (the hex
// token, a digest's, matches none of their wildcards):
//
//	ddrun.parts.<root>.get                  get         worker -> coordinator
//	ddrun.parts.<root>.to.<worker>.<nonce>  sums, block coordinator -> worker
//
// <root> is the first 12 bytes of the file's root digest in hex, <nonce>
// 8 random bytes in hex, one per part received.
func partsGetSubject(root []byte) string {
	return "ddrun.parts." + hex.EncodeToString(root[:12]) + ".get"
}
func partsToSubject(root []byte, worker, nonce string) string {
	return "ddrun.parts." + hex.EncodeToString(root[:12]) + ".to." + worker + "." + nonce
}

// Message kinds: cluster numbers its 1, 5 and 64 to 73, dsearch 96 up,
// dtrws/remote 112 to 120.
const (
	kindPartsGet   transport.Kind = 128
	kindPartsSums  transport.Kind = 129
	kindPartsBlock transport.Kind = 130
)

// partsBlockSize is the blocks' size (a variable for the tests, which
// make files of many small blocks).
var partsBlockSize = shard.ShipBlockSize

// Bounds of the parts' protocol.
const (
	// partsWindow is the most blocks a worker asks for at once, and so
	// the most a coordinator reads for one request (one at a time).
	partsWindow = 16
	// sumsPage is the block hashes per sums message (512 KiB).
	sumsPage = 1 << 14
	// partsResend: a request with no answer this long is sent again;
	// partsGiveUp: with none of its blocks in this long, a receive fails.
	partsResend = time.Second
	partsGiveUp = 30 * time.Second
)

type (
	// partsGet asks for blocks of the file (Blocks, increasing, at most
	// partsWindow) or, when Sums, one page of its block hashes, to be
	// sent to partsToSubject(root, To, Nonce).
	partsGet struct {
		To     string   `msgpack:"to"`
		Nonce  string   `msgpack:"nonce"`
		Sums   bool     `msgpack:"sums,omitempty"`
		Page   int      `msgpack:"page,omitempty"`
		Blocks []uint32 `msgpack:"blocks,omitempty"`
	}
	// partsSums is page Page of the block hashes (32 bytes each).
	partsSums struct {
		Page int    `msgpack:"page"`
		Sums []byte `msgpack:"sums"`
	}
	// partsBlock is block K of the file.
	partsBlock struct {
		K    int    `msgpack:"k"`
		Data []byte `msgpack:"data"`
	}
)

// hashParts opens the planned file, hashes its blocks and announces
// their digest in every spec (shard.Blocks), unless the workers read the
// file (PartsFile); PartsNATS also tells the workers to receive the file
// though they could read it. The file stays open (until release) for
// serveParts: the coordinator serves what it hashed, wherever the path
// leads afterwards.
func (p *shardPlan) hashParts(ctx context.Context, mode Parts, log *slog.Logger) error {
	if mode == PartsFile || len(p.layout.Specs) == 0 {
		return nil
	}
	t0 := time.Now()
	f, err := os.Open(p.layout.Specs[0].Path)
	if err != nil {
		return fmt.Errorf("hashing the parts' file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		p.blocks, err = shard.HashBlocks(ctx, f, fi.Size(), partsBlockSize)
	}
	if err == nil {
		err = p.blocks.Announce(p.layout)
	}
	if err != nil {
		f.Close()
		p.blocks = nil
		return fmt.Errorf("hashing the parts' file: %w", err)
	}
	p.partsFile = f
	for w := range p.layout.Specs {
		p.layout.Specs[w].Receive = mode == PartsNATS
	}
	log.Info("sharding: the file's blocks hashed, for the workers that receive their parts", "parts", mode, "blocks", len(p.blocks.Sums)/sha256.Size, "seconds", time.Since(t0).Seconds())
	return nil
}

// release closes what the plan holds open (the parts' file).
func (p *shardPlan) release() {
	if p.partsFile != nil {
		p.partsFile.Close()
		p.partsFile = nil
	}
}

// serveParts answers the workers' requests for blocks of the planned
// file on tr until stop is called (nothing to do when the file's blocks
// were not hashed: PartsFile). It reads one block at a time into one
// buffer: it never holds a part, nor the model.
func (p *shardPlan) serveParts(ctx context.Context, tr transport.Transport, log *slog.Logger) (stop func(), err error) {
	if p.blocks == nil {
		return func() {}, nil
	}
	ps := &partServer{ctx: ctx, tr: tr, f: p.partsFile, b: p.blocks, buf: make([]byte, p.blocks.BlockSize), log: log}
	sub, err := tr.Subscribe(partsGetSubject(p.blocks.Root), ps.onGet)
	if err == nil {
		err = tr.Flush(ctx)
	}
	if err != nil {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
		return nil, fmt.Errorf("serving the parts: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// partServer is a coordinator's side of the parts' protocol.
type partServer struct {
	ctx context.Context
	tr  transport.Transport
	f   *os.File
	b   *shard.Blocks
	buf []byte
	log *slog.Logger
}

// onGet answers one request (calls are sequential: one buffer serves all).
func (s *partServer) onGet(_ string, data []byte) {
	var req partsGet
	h, err := transport.DecodeInto(data, &req)
	if err == nil && h.Kind != kindPartsGet {
		err = fmt.Errorf("a %v message", h.Kind)
	}
	if err == nil {
		err = req.check(len(s.b.Sums) / sha256.Size)
	}
	if err != nil {
		s.log.Debug("a request for parts' blocks dropped", "err", err)
		return
	}
	to := partsToSubject(s.b.Root, req.To, req.Nonce)
	if req.Sums {
		from := req.Page * sumsPage * sha256.Size
		s.send(to, kindPartsSums, partsSums{Page: req.Page, Sums: s.b.Sums[from:min(len(s.b.Sums), from+sumsPage*sha256.Size)]})
		return
	}
	for _, k := range req.Blocks {
		off, n := s.b.Block(int(k))
		if _, err := s.f.ReadAt(s.buf[:n], off); err != nil {
			s.log.Warn("a part's block could not be read", "block", k, "err", err)
			return
		}
		s.send(to, kindPartsBlock, partsBlock{K: int(k), Data: s.buf[:n]})
	}
}

func (s *partServer) send(subject string, kind transport.Kind, body any) {
	data, err := transport.Encode(transport.Header{Kind: kind}, body)
	if err == nil {
		err = s.tr.Publish(s.ctx, subject, data)
	}
	if err != nil && s.ctx.Err() == nil {
		s.log.Warn("a part's block could not be sent", "err", err)
	}
}

// check bounds a request of a file of n blocks.
func (g *partsGet) check(n int) error {
	if err := transport.ValidName(g.To); err != nil {
		return err
	}
	if len(g.Nonce) != 16 {
		return errors.New("a nonce that is not 16 hex digits")
	}
	if _, err := hex.DecodeString(g.Nonce); err != nil {
		return errors.New("a nonce that is not 16 hex digits")
	}
	if g.Sums {
		if g.Page < 0 || g.Page >= (max(n, 1)+sumsPage-1)/sumsPage {
			return fmt.Errorf("page %d of the hashes of %d blocks", g.Page, n)
		}
		return nil
	}
	if len(g.Blocks) == 0 || len(g.Blocks) > partsWindow {
		return fmt.Errorf("%d blocks asked at once", len(g.Blocks))
	}
	for _, k := range g.Blocks {
		if int64(k) >= int64(n) {
			return fmt.Errorf("block %d of %d", k, n)
		}
	}
	return nil
}

// partReceiver is a worker's side: it has a worker that cannot read its
// part from the coordinator's file (or is told not to) receive it into
// its own state directory.
type partReceiver struct {
	tr   transport.Transport
	name string
	dirs shard.Dirs // where the worker reads model files and writes
	log  *slog.Logger
}

// receive prepares spec to be read (shard.Load, LoadPiece): from the
// file at its path when the spec announces no digest, or, unless told to
// receive it, when this worker can read the file planned there; else from
// the blocks received. done releases what it set up (the received
// blocks' file is removed: the part is in memory once loaded).
func (r *partReceiver) receive(ctx context.Context, spec *shard.Spec) (done func(), err error) {
	if len(spec.Root) == 0 {
		// Nothing to receive: the file, where this worker may read it.
		p, err := r.dirs.ModelPath(spec.Path)
		if err != nil {
			return nil, err
		}
		spec.Path = p
		return func() {}, nil
	}
	if !spec.Receive {
		p, why := r.dirs.ModelPath(spec.Path)
		if why == nil {
			planned := *spec
			planned.Path = p
			if why = planned.ReadableFile(); why == nil {
				spec.Path = p
				return func() {}, nil
			}
		}
		r.log.Info("the part's file is not readable here: receiving its blocks from the coordinator", "why", why)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	c := &partsClient{tr: r.tr, name: r.name, nonce: hex.EncodeToString(nonce[:]), root: spec.Root,
		in: make(chan partsReply, 2*partsWindow), done: make(chan struct{})}
	sub, err := r.tr.Subscribe(partsToSubject(spec.Root, r.name, c.nonce), c.onReply)
	if err != nil {
		return nil, fmt.Errorf("receiving the part: %w", err)
	}
	stop := func() {
		_ = sub.Unsubscribe()
		close(c.done)
	}
	if err := r.tr.Flush(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("receiving the part: %w", err)
	}
	t0 := time.Now()
	n, err := spec.NumBlocks()
	var sums []byte
	if err == nil {
		sums, err = c.sums(ctx, n)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("receiving the part of %s: %w", spec.Path, err)
	}
	rec, err := shard.Receive(ctx, r.dirs.State, spec, sums, c.fetch)
	if err != nil {
		stop()
		return nil, err
	}
	spec.UseReceived(rec)
	return func() {
		blocks, bytes := rec.Held()
		r.log.Info("part received from the coordinator", "blocks", blocks, "bytes", bytes, "seconds", time.Since(t0).Seconds())
		stop()
		_ = rec.Close()
	}, nil
}

// partsReply is a sums page or a block, decoded.
type partsReply struct {
	sums  *partsSums
	block *partsBlock
}

// partsClient is one receive's exchange with the coordinator.
type partsClient struct {
	tr    transport.Transport
	name  string
	nonce string
	root  []byte
	in    chan partsReply
	done  chan struct{}
}

func (c *partsClient) onReply(_ string, data []byte) {
	h, raw, err := transport.Decode(data)
	var r partsReply
	switch {
	case err != nil:
		return
	case h.Kind == kindPartsSums:
		r.sums = new(partsSums)
		err = transport.DecodeBody(raw, r.sums)
	case h.Kind == kindPartsBlock:
		r.block = new(partsBlock)
		err = transport.DecodeBody(raw, r.block)
	default:
		return
	}
	if err != nil {
		return
	}
	select {
	case c.in <- r:
	case <-c.done:
	}
}

func (c *partsClient) get(ctx context.Context, g partsGet) error {
	g.To, g.Nonce = c.name, c.nonce
	data, err := transport.Encode(transport.Header{Kind: kindPartsGet, From: c.name}, g)
	if err != nil {
		return err
	}
	return c.tr.Publish(ctx, partsGetSubject(c.root), data)
}

// sums receives the hashes of the file's n blocks, a page at a time.
func (c *partsClient) sums(ctx context.Context, n int) ([]byte, error) {
	out := make([]byte, 0, sha256.Size*min(n, sumsPage)) // grown by what arrives, not by what a spec claims
	for page := 0; page*sumsPage < max(n, 1); page++ {
		want := sha256.Size * min(sumsPage, n-page*sumsPage)
		have := false
		err := c.await(ctx, func() error { return c.get(ctx, partsGet{Sums: true, Page: page}) }, func(r partsReply) (bool, error) {
			if r.sums == nil || r.sums.Page != page || have {
				return false, nil
			}
			if len(r.sums.Sums) != want {
				return false, fmt.Errorf("page %d of the block hashes: %d bytes, want %d (forged or garbled)", page, len(r.sums.Sums), want)
			}
			out, have = append(out, r.sums.Sums...), true
			return true, nil
		}, func() bool { return have })
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fetch is the shard.Fetch of the coordinator's blocks: at most
// partsWindow blocks asked at a time, the missing ones asked again.
func (c *partsClient) fetch(ctx context.Context, blocks []int, got func(k int, data []byte) error) error {
	for len(blocks) > 0 {
		win := blocks[:min(len(blocks), partsWindow)]
		blocks = blocks[len(win):]
		missing := make(map[int]bool, len(win))
		for _, k := range win {
			missing[k] = true
		}
		ask := func() error {
			g := partsGet{}
			for _, k := range win {
				if missing[k] {
					g.Blocks = append(g.Blocks, uint32(k))
				}
			}
			return c.get(ctx, g)
		}
		err := c.await(ctx, ask, func(r partsReply) (bool, error) {
			if r.block == nil || !missing[r.block.K] {
				return false, nil
			}
			delete(missing, r.block.K)
			return true, got(r.block.K, r.block.Data)
		}, func() bool { return len(missing) == 0 })
		if err != nil {
			return err
		}
	}
	return nil
}

// await sends a request and hands the replies to take until finished,
// sending the request again after partsResend without a reply that take
// used (a coordinator busy with other workers' blocks is not asked twice
// while it answers); it fails after partsGiveUp without one.
func (c *partsClient) await(ctx context.Context, send func() error, take func(partsReply) (bool, error), finished func() bool) error {
	if err := send(); err != nil {
		return err
	}
	resend := time.NewTicker(partsResend)
	defer resend.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-resend.C:
			if time.Since(last) > partsGiveUp {
				return fmt.Errorf("the coordinator sent nothing of the part's file for %v (is it serving the parts? with --parts file it sends none)", partsGiveUp)
			}
			if err := send(); err != nil {
				return err
			}
		case r := <-c.in:
			used, err := take(r)
			if err != nil {
				return err
			}
			if used {
				last = time.Now()
				resend.Reset(partsResend) // asked again only after a second of silence
				if finished() {
					return nil
				}
			}
		}
	}
}
