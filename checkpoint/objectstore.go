package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ObjectStoreOptions configures OpenObjectStore.
type ObjectStoreOptions struct {
	// Replicas of the bucket in a clustered JetStream (default 1, at most
	// 5). It applies only when OpenObjectStore creates the bucket; an
	// existing bucket keeps its settings.
	Replicas int
	// ChunkSize is the size of the NATS messages a blob is cut into
	// (default 128 KiB, the nats.go default). It must fit the server's
	// max payload.
	ChunkSize int
	// Memory keeps a bucket created by OpenObjectStore in memory rather
	// than in files (for tests; lost when the servers restart).
	Memory bool
}

// ObjectStore is a Store in a NATS JetStream object store bucket, shared
// by the coordinators of a Raft group and replicated by the NATS cluster.
// Every call runs under a deadline proportional to the size it moves
// (opTimeout), on top of the caller's ctx: the jetstream package's
// default of 5 s per call fails on large blobs.
//
// A Put interrupted by a crash leaves chunks that no object names (the
// object's meta message is published last), so the object is simply
// absent. Two concurrent Puts of the same new object both succeed (the
// last one wins and may purge the other's chunks under a concurrent Get,
// which then fails); Write never puts one object twice at once.
type ObjectStore struct {
	obs    jetstream.ObjectStore
	bucket string
	chunk  uint32
}

// OpenObjectStore binds to the JetStream object store bucket on nc,
// creating it when missing (file storage, opts.Replicas replicas).
func OpenObjectStore(ctx context.Context, nc *nats.Conn, bucket string, opts ObjectStoreOptions) (*ObjectStore, error) {
	if nc == nil {
		return nil, fmt.Errorf("object store %q: no NATS connection", bucket)
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.Replicas < 1 || opts.Replicas > 5 {
		return nil, fmt.Errorf("object store %q: replicas %d not in [1, 5]", bucket, opts.Replicas)
	}
	if opts.ChunkSize == 0 {
		opts.ChunkSize = 128 << 10
	}
	// Leave room for the message's headers and subject under max payload.
	if maxChunk := int(nc.MaxPayload()) - 4096; opts.ChunkSize < 1 || opts.ChunkSize > maxChunk {
		return nil, fmt.Errorf("object store %q: chunk size %d not in [1, %d] (server max payload %d)", bucket, opts.ChunkSize, maxChunk, nc.MaxPayload())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("object store %q: %w", bucket, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout(0))
	defer cancel()
	obs, err := js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg := jetstream.ObjectStoreConfig{
			Bucket:      bucket,
			Description: "ddrun checkpoint blobs",
			Replicas:    opts.Replicas,
			Storage:     jetstream.FileStorage,
		}
		if opts.Memory {
			cfg.Storage = jetstream.MemoryStorage
		}
		obs, err = js.CreateObjectStore(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, bucket) // created meanwhile by another coordinator
		}
	}
	if err != nil {
		return nil, fmt.Errorf("object store %q: %w", bucket, err)
	}
	return &ObjectStore{obs: obs, bucket: bucket, chunk: uint32(opts.ChunkSize)}, nil
}

// maxPrealloc bounds the buffer Get allocates up front from the size the
// bucket claims, so that a damaged record cannot exhaust memory at once.
const maxPrealloc = 1 << 30

// opTimeout is the deadline of one call moving size bytes: 30 s plus 1 s
// per started 8 MiB (a 256 MiB blob gets 62 s).
func opTimeout(size int64) time.Duration {
	const per = 8 << 20
	return 30*time.Second + time.Duration((size+per-1)/per)*time.Second
}

// Bucket returns the bucket's name.
func (s *ObjectStore) Bucket() string { return s.bucket }

// Put implements Store. An existing object of the right size is left
// alone; one of another size is replaced.
func (s *ObjectStore) Put(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	info, err := s.info(ctx, name)
	switch {
	case err == nil && info.Size == uint64(len(data)):
		return nil
	case err != nil && !errors.Is(err, jetstream.ErrObjectNotFound):
		return fmt.Errorf("object store %s: put %s: %w", s.bucket, name, err)
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout(int64(len(data))))
	defer cancel()
	meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: s.chunk}}
	if _, err := s.obs.Put(pctx, meta, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("object store %s: put %s (%d bytes): %w", s.bucket, name, len(data), err)
	}
	return nil
}

// Get implements Store.
func (s *ObjectStore) Get(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	info, err := s.info(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("object store %s: get %s: %w", s.bucket, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: get %s: %w", s.bucket, name, err)
	}
	// The object's reader does not end a Read blocked on its next chunk
	// when its context ends (a Read that another blob's failure cancels
	// would wait out the timeout): the read runs on, to its own timeout,
	// and Get returns when ctx ends.
	type got struct {
		b   []byte
		err error
	}
	done := make(chan got, 1)
	go func() {
		b, err := s.read(context.WithoutCancel(ctx), name, info.Size)
		done <- got{b, err}
	}()
	select {
	case g := <-done:
		return g.b, g.err
	case <-ctx.Done():
		return nil, fmt.Errorf("object store %s: get %s: %w", s.bucket, name, ctx.Err())
	}
}

// read reads the object name of size bytes, within opTimeout(size).
func (s *ObjectStore) read(ctx context.Context, name string, size uint64) ([]byte, error) {
	gctx, cancel := context.WithTimeout(ctx, opTimeout(int64(size)))
	defer cancel()
	r, err := s.obs.Get(gctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("object store %s: get %s: %w", s.bucket, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: get %s: %w", s.bucket, name, err)
	}
	defer r.Close()
	var buf bytes.Buffer
	if size <= maxPrealloc {
		buf.Grow(int(size) + bytes.MinRead)
	}
	// The reader checks the object's digest at the end.
	_, err = buf.ReadFrom(r)
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return nil, fmt.Errorf("object store %s: get %s: %w: %w", s.bucket, name, ErrCorrupt, err)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: get %s (%d bytes): %w", s.bucket, name, size, err)
	}
	return buf.Bytes(), nil
}

// Delete implements Store.
func (s *ObjectStore) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout(0))
	defer cancel()
	if err := s.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("object store %s: delete %s: %w", s.bucket, name, err)
	}
	return nil
}

// List implements Store. Objects in the bucket whose names are not sha256
// hex digests (put there by something else) are not listed.
func (s *ObjectStore) List(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout(0))
	defer cancel()
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: list: %w", s.bucket, err)
	}
	names := make([]string, 0, len(infos))
	for _, info := range infos {
		if validObject(info.Name) {
			names = append(names, info.Name)
		}
	}
	return names, nil
}

func (s *ObjectStore) info(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout(0))
	defer cancel()
	return s.obs.GetInfo(ctx, name)
}
