// Package ratelimit says when a repeated event is worth a log line: the
// first of its kind, then at most one per interval, each with the number of
// its kind left out since the last one admitted. Dropped messages, chunk
// problems, unauthentic messages and Raft's complaints about a dead peer
// all go through it, so that a flood costs a line every few seconds.
//
// It knows nothing of logging or of what the events are.
package ratelimit

import (
	"sync"
	"time"
)

// DefaultMaxKeys bounds the kinds a Repeats remembers: past it, its memory
// starts afresh (a few repeats more are admitted).
const DefaultMaxKeys = 1024

// Repeats admits events by kind (K). The zero value is not usable: set
// Every. It is safe for concurrent use.
type Repeats[K comparable] struct {
	Every   time.Duration    // least time between two admitted events of a kind
	Now     func() time.Time // the clock (nil: time.Now)
	MaxKeys int              // 0: DefaultMaxKeys

	mu   sync.Mutex
	seen map[K]*entry
}

type entry struct {
	admitted   time.Time // when the kind was last admitted
	suppressed int       // events of the kind left out since
}

// Admit records an event of kind k and says whether it is to be logged
// (the kind's first, or the first after Every), and how many of its kind
// were left out since the last one admitted.
func (r *Repeats[K]) Admit(k K) (suppressed int, ok bool) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	t := now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.seen[k]
	if e == nil {
		max := r.MaxKeys
		if max <= 0 {
			max = DefaultMaxKeys
		}
		if r.seen == nil || len(r.seen) >= max {
			r.seen = map[K]*entry{}
		}
		r.seen[k] = &entry{admitted: t}
		return 0, true
	}
	if t.Sub(e.admitted) < r.Every {
		e.suppressed++
		return 0, false
	}
	suppressed = e.suppressed
	e.admitted, e.suppressed = t, 0
	return suppressed, true
}
