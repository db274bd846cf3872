// Package testlog is a log sink for tests: a buffer that the goroutines
// of a test (a logger's handler among them) may write to at once, and a
// test read at any time, to check what was logged.
//
// It must not know what is logged or by whom (it imports nothing of
// ddrun, so that the tests of any package, transport's included, may use
// it).
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. Its
// zero value is empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
