package cli

import (
	"fmt"
	"time"
)

// Percent returns a progress callback (done of total) that prints the
// percentage done, "WHAT: N%", at most once per every.
func (c *Console) Percent(what string, every time.Duration) func(done, total int64) {
	last := time.Now()
	return func(done, total int64) {
		if now := time.Now(); now.Sub(last) >= every && total > 0 {
			last = now
			c.Print("progress", fmt.Sprintf("%s: %d%%", what, 100*done/total), "what", what, "percent", 100*done/total)
		}
	}
}

// Every calls tick with the time since Every was called, once per
// interval, until stop is called (for progress that comes from no
// callback of its own).
func Every(interval time.Duration, tick func(elapsed time.Duration)) (stop func()) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick(time.Since(start))
			}
		}
	}()
	return func() { close(done) }
}
