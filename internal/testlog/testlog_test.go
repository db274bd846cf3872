package testlog

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Lines logged from many goroutines at once all arrive whole (go test
// -race checks the locking).
func TestBufferConcurrentWriters(t *testing.T) {
	var b Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				log.Info("line", "g", g, "i", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8*50 {
		t.Fatalf("%d lines, want %d", len(lines), 8*50)
	}
	for g := range 8 {
		for i := range 50 {
			if want := fmt.Sprintf("msg=line g=%d i=%d", g, i); !strings.Contains(b.String(), want) {
				t.Fatalf("no line %q", want)
			}
		}
	}
}
