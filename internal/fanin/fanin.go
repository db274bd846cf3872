// Package fanin runs one source per part at once and lets each hand on
// what it produced with no other source's hand-on running: a sharded
// run's --out, fetched from every worker in parallel into one writer. It
// owns the goroutines, the lock and the first error; it must not know
// what the sources produce or where from (it imports nothing of ddrun).
package fanin

import (
	"errors"
	"sync"
)

// ErrStopped is what serial returns once another source failed: the
// source should stop and return it (Run does not report it).
var ErrStopped = errors.New("stopped: another part failed")

// Run calls source(i, serial) for every i in [0, n), each in its own
// goroutine, and waits for all. serial(f) runs f with no other source's f
// running (so f may hand on to one writer that is not safe for concurrent
// use), unless a source or an f failed, when it returns ErrStopped
// without running f. Run returns the first error (by source) that is not
// ErrStopped, nil when all succeeded.
func Run(n int, source func(i int, serial func(f func() error) error) error) error {
	var mu sync.Mutex // serial's, and failed's
	failed := false
	serial := func(f func() error) error {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return ErrStopped
		}
		err := f()
		failed = err != nil
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = source(i, serial); errs[i] != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrStopped) {
			return err
		}
	}
	return nil
}
