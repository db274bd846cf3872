package fanin

import (
	"errors"
	"sync/atomic"
	"testing"
)

// Every source's items reach the one writer, never two hand-ons at once;
// a failing source stops the others at their next item, and its error,
// not ErrStopped, is what Run returns.
func TestRun(t *testing.T) {
	var inside atomic.Int32
	var got []int // not safe for concurrent use: serial guards it
	const parts, items = 4, 200
	err := Run(parts, func(i int, serial func(func() error) error) error {
		for k := range items {
			if err := serial(func() error {
				if inside.Add(1) != 1 {
					t.Error("two hand-ons at once")
				}
				got = append(got, i*items+k)
				inside.Add(-1)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(got) != parts*items {
		t.Fatalf("Run: %v, %d of %d items", err, len(got), parts*items)
	}
	seen := make([]bool, parts*items)
	for _, v := range got {
		if seen[v] {
			t.Fatalf("item %d twice", v)
		}
		seen[v] = true
	}

	bad := errors.New("part 2 broke")
	// A hand-on that fails: no hand-on runs after it.
	var broke atomic.Bool
	var after atomic.Int32
	err = Run(parts, func(i int, serial func(func() error) error) error {
		for k := range items {
			if err := serial(func() error {
				if i == 2 && k == 10 {
					broke.Store(true)
					return bad
				}
				if broke.Load() {
					after.Add(1)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, bad) || after.Load() != 0 {
		t.Errorf("a failed hand-on: Run returned %v, want %v; %d hand-ons after it", err, bad, after.Load())
	}
	// A source that fails on its own: the others stop, its error is Run's.
	var ended, unstopped atomic.Int32
	err = Run(parts, func(i int, serial func(func() error) error) error {
		defer ended.Add(1)
		if i == 1 {
			return bad
		}
		for range 1_000_000 { // bounded: a Run that never stops the others fails, not hangs
			if err := serial(func() error { return nil }); err != nil {
				return err
			}
		}
		unstopped.Add(1)
		return nil
	})
	if !errors.Is(err, bad) || ended.Load() != parts || unstopped.Load() != 0 {
		t.Errorf("a failed source: Run returned %v, want %v; %d of %d sources ended, %d never stopped", err, bad, ended.Load(), parts, unstopped.Load())
	}
}
