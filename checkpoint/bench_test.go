package checkpoint

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
)

// benchSizes are the blob sizes of BenchmarkPut and BenchmarkGet;
// DDRUN_BIG_BENCH=1 adds 256 MiB.
func benchSizes() []int {
	sizes := []int{8 << 20, 64 << 20}
	if os.Getenv("DDRUN_BIG_BENCH") == "1" {
		sizes = append(sizes, 256<<20)
	}
	return sizes
}

// benchStores are the stores benchmarked: Dir (fsync per object) and
// ObjectStore on an in-process JetStream server with file storage.
func benchStores() []struct {
	name string
	open func(b *testing.B) Store
} {
	return []struct {
		name string
		open func(b *testing.B) Store
	}{
		{"dir", func(b *testing.B) Store { return openDir(b) }},
		{"objectstore", func(b *testing.B) Store { return openObjectStore(b, startJetStream(b), ObjectStoreOptions{}) }},
	}
}

// benchEachStore runs bench as a sub-benchmark on each store and size,
// with a fresh store and random data of that size.
func benchEachStore(b *testing.B, bench func(b *testing.B, s Store, size int, data []byte)) {
	for _, st := range benchStores() {
		for _, size := range benchSizes() {
			b.Run(fmt.Sprintf("%s/%dMiB", st.name, size>>20), func(b *testing.B) {
				bench(b, st.open(b), size, randomBytes(uint64(size), size))
			})
		}
	}
}

// BenchmarkPut stores a new object of each size per iteration (hashing
// the data is not timed).
func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	benchEachStore(b, func(b *testing.B, s Store, size int, data []byte) {
		b.SetBytes(int64(size))
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			binary.LittleEndian.PutUint64(data, uint64(i)) // a new object each time
			name := objectName(data)
			b.StartTimer()
			if err := s.Put(ctx, name, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGet reads one stored object of each size per iteration
// (a Dir reads it from the page cache).
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	benchEachStore(b, func(b *testing.B, s Store, size int, data []byte) {
		name := objectName(data)
		if err := s.Put(ctx, name, data); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(size))
		for b.Loop() {
			got, err := s.Get(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != size {
				b.Fatalf("got %d bytes, want %d", len(got), size)
			}
		}
	})
}
