package transport

import (
	"cmp"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Verdict is what a Filter says about a message header.
type Verdict uint8

const (
	// Current: the message belongs to the filter's (epoch, iter). Keep it.
	Current Verdict = iota
	// Ahead: the message belongs to a later iteration or epoch. Keep it;
	// the caller decides whether to Advance.
	Ahead
	// Stale: an earlier epoch, or an earlier iteration of this epoch. Drop.
	Stale
	// Duplicate: the same (From, Seq) was kept before, or Seq is too far
	// behind the newest Seq seen from From to tell. Drop.
	Duplicate
	// OtherJob: the header names another job. Drop.
	OtherJob
)

// Keep reports whether the message should be processed.
func (v Verdict) Keep() bool { return v == Current || v == Ahead }

func (v Verdict) String() string {
	switch v {
	case Current:
		return "current"
	case Ahead:
		return "ahead"
	case Stale:
		return "stale"
	case Duplicate:
		return "duplicate"
	case OtherJob:
		return "other-job"
	}
	return "verdict?"
}

// FilterOptions sizes a Filter. Zero fields take the defaults.
type FilterOptions struct {
	// Window is how many sequence numbers below the newest seen from a
	// sender are remembered individually (default 1024, rounded up to a
	// multiple of 64). Older ones count as duplicates.
	Window int
	// MaxSenders bounds the senders remembered (default 4096); beyond it
	// the least recently heard is forgotten.
	MaxSenders int
}

// Filter drops stale and duplicated messages for a receiver. It holds a
// position (epoch, iter), ordered lexicographically, and per sender a
// sliding window of the sequence numbers it has kept. Check decides in
// this order: another job, then older than the position (Stale), then an
// already kept (From, Seq) (Duplicate); a message that passes is Current or
// Ahead and its (From, Seq) is recorded. Seq 0 is never deduplicated.
//
// A sender may have several windows (at most maxWindows, the least
// recently used forgotten): a Seq a window or more away from every window
// of its sender, and above the lowest, is kept but not recorded, and a
// second such Seq within a window of the first opens a new window there
// (a restarted sender's new numbers). A Seq far below every window is a
// Duplicate. So forged messages with huge Seqs, one or many, do not make
// the real sender's next messages look like old duplicates: those go on
// in the real sender's own window (the huge-Seq takeover of issue 30).
//
// Senders must number their messages with increasing Seq; a Sequence does
// that across restarts too. A Filter is safe for concurrent use.
type Filter struct {
	job string

	mu      sync.Mutex
	epoch   uint64
	iter    uint64
	window  uint64 // bits, a multiple of 64
	max     int
	senders map[string]*senderWindows
	tick    uint64
}

// maxWindows bounds a sender's windows.
const maxWindows = 4

type senderWindows struct {
	wins []*window
	far  uint64 // the last Seq seen away from every window, 0 if none
	used uint64 // f.tick when last kept, for eviction
}

type window struct {
	top  uint64   // highest Seq kept
	bits []uint64 // bit s%len for Seq s in (top-window, top]
	used uint64   // f.tick when last used
}

// NewFilter returns a filter for job at position (0, 0). An empty job
// accepts every job.
func NewFilter(job string, opts FilterOptions) *Filter {
	if opts.Window <= 0 {
		opts.Window = 1024
	}
	if opts.MaxSenders <= 0 {
		opts.MaxSenders = 4096
	}
	return &Filter{
		job:     job,
		window:  uint64((opts.Window + 63) / 64 * 64),
		max:     opts.MaxSenders,
		senders: make(map[string]*senderWindows),
	}
}

// Advance moves the position to (epoch, iter) if that is later than the
// current one; it never moves back. It reports whether it moved.
func (f *Filter) Advance(epoch, iter uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if epoch < f.epoch || epoch == f.epoch && iter <= f.iter {
		return false
	}
	f.epoch, f.iter = epoch, iter
	return true
}

// Position returns the current (epoch, iter).
func (f *Filter) Position() (epoch, iter uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, f.iter
}

// Check classifies h and, when the verdict is Keep, records (h.From, h.Seq).
func (f *Filter) Check(h Header) Verdict {
	if f.job != "" && h.Job != f.job {
		return OtherJob
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v := Current
	switch {
	case h.Epoch < f.epoch || h.Epoch == f.epoch && h.Iter < f.iter:
		return Stale
	case h.Epoch > f.epoch || h.Iter > f.iter:
		v = Ahead
	}
	if h.Seq == 0 {
		return v
	}
	if !f.record(h.From, h.Seq) {
		return Duplicate
	}
	return v
}

// record notes seq from sender and reports whether it is new.
func (f *Filter) record(from string, seq uint64) bool {
	f.tick++
	s := f.senders[from]
	if s == nil {
		if len(f.senders) >= f.max {
			f.evict()
		}
		f.senders[from] = &senderWindows{wins: []*window{f.newWindow(seq)}, used: f.tick}
		return true
	}
	s.used = f.tick
	var near *window
	lowest := uint64(math.MaxUint64)
	for _, w := range s.wins {
		lowest = min(lowest, w.top)
		if f.near(w, seq) && (near == nil || w.top > near.top) {
			near = w
		}
	}
	if near != nil {
		near.used = f.tick
		return f.take(near, seq)
	}
	switch {
	case seq < lowest:
		return false // far behind every window
	case seq == s.far:
		return false
	case s.far == 0 || max(seq, s.far)-min(seq, s.far) >= f.window:
		// Far ahead: trusted only when it confirms an earlier far Seq.
		s.far = seq
		return true // kept, not recorded
	}
	w := f.newWindow(max(seq, s.far))
	w.set(seq)
	w.set(s.far)
	s.far = 0
	if len(s.wins) >= maxWindows {
		lru := 0
		for i, x := range s.wins {
			if x.used < s.wins[lru].used {
				lru = i
			}
		}
		s.wins = append(s.wins[:lru], s.wins[lru+1:]...)
	}
	s.wins = append(s.wins, w)
	return true
}

func (f *Filter) newWindow(top uint64) *window {
	w := &window{top: top, bits: make([]uint64, f.window/64), used: f.tick}
	w.set(top)
	return w
}

// near reports whether seq is within a window of w's top, either side.
func (f *Filter) near(w *window, seq uint64) bool {
	if seq >= w.top {
		return seq-w.top < f.window
	}
	return w.top-seq < f.window
}

// take records seq, near w's top, in w and reports whether it is new.
func (f *Filter) take(w *window, seq uint64) bool {
	switch {
	case seq > w.top:
		for s := w.top + 1; s < seq; s++ {
			w.unset(s)
		}
		w.top = seq
		w.set(seq)
		return true
	case w.has(seq):
		return false
	default:
		w.set(seq)
		return true
	}
}

func (w *window) idx(s uint64) (int, uint64) {
	n := uint64(len(w.bits)) * 64
	b := s % n
	return int(b / 64), 1 << (b % 64)
}
func (w *window) set(s uint64)      { i, m := w.idx(s); w.bits[i] |= m }
func (w *window) unset(s uint64)    { i, m := w.idx(s); w.bits[i] &^= m }
func (w *window) has(s uint64) bool { i, m := w.idx(s); return w.bits[i]&m != 0 }

func (f *Filter) evict() {
	var victim string
	var least uint64
	first := true
	for k, w := range f.senders {
		if first || w.used < least {
			victim, least, first = k, w.used, false
		}
	}
	delete(f.senders, victim)
}

// Sequence numbers a sender's messages for Filter. It starts at the
// current time in nanoseconds, so a restarted sender continues above its
// previous incarnation's numbers (unless it sent more than a billion
// messages a second), and never yields 0.
type Sequence struct{ n atomic.Uint64 }

// NewSequence returns a Sequence starting at the current time.
func NewSequence() *Sequence {
	s := new(Sequence)
	s.n.Store(uint64(time.Now().UnixNano()))
	return s
}

// Next returns the next sequence number.
func (s *Sequence) Next() uint64 {
	for {
		if v := s.n.Add(1); v != 0 {
			return v
		}
	}
}

// Newest admits a sender's message only when its sequence number is above
// every earlier one it admitted from that sender: for announcements
// (hellos), which carry no other order, a recorded one replayed later is
// not news. It remembers at most Max senders (0: 65,536); past that it
// refuses senders it does not know. Safe for concurrent use.
type Newest struct {
	Max int
	mu  sync.Mutex
	seq map[string]uint64
}

// Admit reports whether seq from sender from is newer than every earlier
// admitted one, and records it when it is.
func (n *Newest) Admit(from string, seq uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seq == nil {
		n.seq = map[string]uint64{}
	}
	last, known := n.seq[from]
	if !known && len(n.seq) >= cmp.Or(n.Max, 1<<16) || seq <= last {
		return false
	}
	n.seq[from] = seq
	return true
}
