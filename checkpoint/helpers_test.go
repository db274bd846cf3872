package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// objectName returns the content address of data.
func objectName(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// startJetStream starts a JetStream-enabled NATS server storing under a
// temporary directory and returns a connection to it; both end with tb.
func startJetStream(tb testing.TB) *nats.Conn {
	tb.Helper()
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		tb.Fatalf("nats server: %v", err)
	}
	go srv.Start()
	tb.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(10 * time.Second) {
		tb.Fatal("nats server not ready after 10s")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

var bucketSeq atomic.Int64

// openObjectStore opens a fresh bucket on nc.
func openObjectStore(tb testing.TB, nc *nats.Conn, opts ObjectStoreOptions) *ObjectStore {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := OpenObjectStore(ctx, nc, fmt.Sprintf("ckpt-%d", bucketSeq.Add(1)), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func openDir(tb testing.TB) *Dir {
	tb.Helper()
	d, err := OpenDir(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// storeKind opens fresh empty stores of one kind.
type storeKind struct {
	name string
	open func(t *testing.T) Store
}

// storeKinds lists every Store implementation; the object stores share
// one server per call of storeKinds' caller (started lazily).
func storeKinds(t *testing.T) []storeKind {
	var nc *nats.Conn
	return []storeKind{
		{"mem", func(t *testing.T) Store { return NewMem() }},
		{"dir", func(t *testing.T) Store { return openDir(t) }},
		{"objectstore", func(tt *testing.T) Store {
			if nc == nil {
				nc = startJetStream(t)
			}
			return openObjectStore(tt, nc, ObjectStoreOptions{})
		}},
	}
}

// countingStore counts Puts and can make them fail.
type countingStore struct {
	Store
	puts    atomic.Int64
	failPut error
}

func (s *countingStore) Put(ctx context.Context, name string, data []byte) error {
	s.puts.Add(1)
	if s.failPut != nil {
		return s.failPut
	}
	return s.Store.Put(ctx, name, data)
}
