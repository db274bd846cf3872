package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestObjectStoreBig puts and gets a 64 MiB blob, more than the
// jetstream package's default 5 s timeout allows on a slow machine, and
// more than one NATS message or one Raft entry should carry.
func TestObjectStoreBig(t *testing.T) {
	ctx := context.Background()
	s := openObjectStore(t, startJetStream(t), ObjectStoreOptions{})
	data := randomBytes(64, 64<<20)
	start := time.Now()
	m, err := Write(ctx, s, Manifest{Job: "big", Iteration: 1}, []Part{{Role: "master", Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	put := time.Since(start)
	start = time.Now()
	got, err := Read(ctx, s, &m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("64 MiB: write %v, read %v", put, time.Since(start))
	if !slices.Equal(got["master"], data) {
		t.Fatal("64 MiB blob differs after the round trip")
	}
}

func TestObjectStoreReopen(t *testing.T) {
	ctx := context.Background()
	nc := startJetStream(t)
	s1, err := OpenObjectStore(ctx, nc, "reopen", ObjectStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(1, 1000)
	mustPut(t, s1, data)
	s2, err := OpenObjectStore(ctx, nc, "reopen", ObjectStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Bucket() != "reopen" {
		t.Errorf("bucket %q", s2.Bucket())
	}
	mustGet(t, s2, data, "get from the reopened bucket")
}

func TestObjectStoreOptions(t *testing.T) {
	ctx := context.Background()
	nc := startJetStream(t)
	cases := []struct {
		name   string
		nc     *nats.Conn
		bucket string
		opts   ObjectStoreOptions
		want   string // error text; "" for success
	}{
		{"defaults", nc, "defaults", ObjectStoreOptions{}, ""},
		{"memory, big chunks", nc, "mem", ObjectStoreOptions{Memory: true, ChunkSize: 512 << 10}, ""},
		{"no connection", nil, "x", ObjectStoreOptions{}, "no NATS connection"},
		{"too many replicas", nc, "x", ObjectStoreOptions{Replicas: 6}, "replicas 6"},
		{"negative replicas", nc, "x", ObjectStoreOptions{Replicas: -1}, "replicas -1"},
		{"replicas on a single server", nc, "x", ObjectStoreOptions{Replicas: 3}, "not supported in non-clustered mode"},
		{"chunk over max payload", nc, "x", ObjectStoreOptions{ChunkSize: 1 << 20}, "chunk size"},
		{"bad bucket name", nc, "a.b", ObjectStoreOptions{}, "a.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenObjectStore(ctx, tc.nc, tc.bucket, tc.opts)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data := randomBytes(2, 3<<20)
			mustPut(t, s, data)
			mustGet(t, s, data, "round trip")
		})
	}
}

// TestObjectStoreCorrupt makes the bucket's record of an object disagree
// with its chunks: Get reports ErrCorrupt and Read a torn checkpoint.
func TestObjectStoreCorrupt(t *testing.T) {
	ctx := context.Background()
	nc := startJetStream(t)
	s := openObjectStore(t, nc, ObjectStoreOptions{})
	m, err := Write(ctx, s, Manifest{Job: "j", Iteration: 1}, []Part{{Role: "master", Data: randomBytes(1, 300<<10)}})
	if err != nil {
		t.Fatal(err)
	}
	name := m.Blobs[0].Object
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wrong := sha256.Sum256([]byte("something else"))
	info.Digest = "SHA-256=" + base64.URLEncoding.EncodeToString(wrong[:])
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg("$O." + s.Bucket() + ".M." + base64.URLEncoding.EncodeToString([]byte(name)))
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Data = raw
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, name); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("get: %v, want ErrCorrupt", err)
	}
	if _, err := Read(ctx, s, &m); !errors.Is(err, ErrTorn) || !strings.Contains(err.Error(), `"master"`) {
		t.Fatalf("read: %v, want ErrTorn naming the blob", err)
	}
}

func TestOpTimeout(t *testing.T) {
	cases := []struct {
		size int64
		want time.Duration
	}{
		{0, 30 * time.Second},
		{1, 31 * time.Second},
		{8 << 20, 31 * time.Second},
		{8<<20 + 1, 32 * time.Second},
		{256 << 20, 62 * time.Second},
	}
	for _, tc := range cases {
		if got := opTimeout(tc.size); got != tc.want {
			t.Errorf("opTimeout(%d) = %v, want %v", tc.size, got, tc.want)
		}
	}
}
