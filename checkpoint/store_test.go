package checkpoint

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestStoreConformance runs the Store contract against every
// implementation.
func TestStoreConformance(t *testing.T) {
	for _, k := range storeKinds(t) {
		t.Run(k.name, func(t *testing.T) { testStoreConformance(t, k.open) })
	}
}

// testStoreConformance checks the Store contract, each case on a fresh
// store from open.
func testStoreConformance(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	a, b, c := randomBytes(1, 1000), randomBytes(2, 300<<10), []byte{}
	cases := []struct {
		name string
		run  func(t *testing.T, s Store)
	}{
		{"put then get", func(t *testing.T, s Store) {
			for _, data := range [][]byte{a, b, c} {
				mustPut(t, s, data)
				mustGet(t, s, data, "get")
			}
		}},
		{"get missing", func(t *testing.T, s Store) {
			_, err := s.Get(ctx, objectName(a))
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("got %v, want ErrNotFound", err)
			}
		}},
		{"put twice is a no-op", func(t *testing.T, s Store) {
			mustPut(t, s, a)
			mustPut(t, s, a)
			assertList(t, s, objectName(a))
			mustGet(t, s, a, "get")
		}},
		{"delete", func(t *testing.T, s Store) {
			mustPut(t, s, a)
			mustPut(t, s, b)
			if err := s.Delete(ctx, objectName(a)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, objectName(a)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get after delete: %v, want ErrNotFound", err)
			}
			assertList(t, s, objectName(b))
			if err := s.Delete(ctx, objectName(a)); err != nil {
				t.Fatalf("delete of a deleted object: %v", err)
			}
			if err := s.Delete(ctx, objectName(c)); err != nil {
				t.Fatalf("delete of a missing object: %v", err)
			}
			mustPut(t, s, a) // a deleted object can come back
			assertList(t, s, objectName(a), objectName(b))
		}},
		{"list", func(t *testing.T, s Store) {
			assertList(t, s)
			mustPut(t, s, a)
			mustPut(t, s, b)
			mustPut(t, s, c)
			assertList(t, s, objectName(a), objectName(b), objectName(c))
		}},
		{"bad names", func(t *testing.T, s Store) {
			for _, name := range []string{"", "../../etc/passwd", "ABC", objectName(a)[:63], objectName(a) + "0", "x" + objectName(a)[1:]} {
				if err := s.Put(ctx, name, a); err == nil {
					t.Errorf("put %q: no error", name)
				}
				if _, err := s.Get(ctx, name); err == nil || errors.Is(err, ErrNotFound) {
					t.Errorf("get %q: %v, want a bad-name error", name, err)
				}
				if err := s.Delete(ctx, name); err == nil {
					t.Errorf("delete %q: no error", name)
				}
			}
			assertList(t, s)
		}},
		{"copies in and out", func(t *testing.T, s Store) {
			data := slices.Clone(a)
			mustPut(t, s, data)
			data[0] ^= 1
			got, err := s.Get(ctx, objectName(a))
			if err != nil || !slices.Equal(got, a) {
				t.Fatalf("stored object changed with the caller's buffer: %v", err)
			}
			got[1] ^= 1
			again, err := s.Get(ctx, objectName(a))
			if err != nil || !slices.Equal(again, a) {
				t.Fatalf("stored object changed with a returned buffer: %v", err)
			}
		}},
		{"cancelled context", func(t *testing.T, s Store) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Put(cctx, objectName(a), a); !errors.Is(err, context.Canceled) {
				t.Errorf("put: %v, want context.Canceled", err)
			}
			if _, err := s.Get(cctx, objectName(a)); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("get: %v, want a context error", err)
			}
		}},
		{"concurrent puts", func(t *testing.T, s Store) {
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() {
					data := randomBytes(uint64(10+i%4), 10<<10) // each object twice
					errs[i] = s.Put(ctx, objectName(data), data)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("put %d: %v", i, err)
				}
			}
			var want []string
			for i := range 4 {
				want = append(want, objectName(randomBytes(uint64(10+i), 10<<10)))
			}
			assertList(t, s, want...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

func mustPut(t *testing.T, s Store, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), objectName(data), data); err != nil {
		t.Fatal(err)
	}
}

// mustGet checks that s returns data under its content address; what
// names the check in the failure.
func mustGet(t *testing.T, s Store, data []byte, what string) {
	t.Helper()
	got, err := s.Get(context.Background(), objectName(data))
	if err != nil || !slices.Equal(got, data) {
		t.Fatalf("%s: %d bytes (want %d), %v", what, len(got), len(data), err)
	}
}

// assertList checks that s holds exactly the objects want.
func assertList(t *testing.T, s Store, want ...string) {
	t.Helper()
	got, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("list: got %d objects %v, want %d %v", len(got), got, len(want), want)
	}
}
