package solver

import (
	"slices"
	"time"
)

// The final polish of a sharded run (the boundary moves after the last
// iteration, distributed TRW-S's and DD-ADMM's) starts a move only while
// it is expected to end within PolishIters of the run's typical iteration
// time (Laps.Typical), or PolishFloor, whichever is longer, from the
// polish's start: on a large model each move costs a few passes over
// every part (copies, the exact score), and the final primal should cost
// about what two iterations do (issue 25); on a small one the floor
// leaves the moves their course, whatever the network's latency.
const (
	PolishIters = 1.0
	PolishFloor = 100 * time.Millisecond
)

// PastDeadline reports whether t is past deadline (never, when deadline is
// zero: the polish then runs every round).
func PastDeadline(deadline, t time.Time) bool { return !deadline.IsZero() && t.After(deadline) }

// PolishDeadline is when a final polish that starts at now stops starting
// moves, after the iterations that laps timed.
func PolishDeadline(now time.Time, laps *Laps) time.Time {
	return now.Add(max(time.Duration(PolishIters*float64(laps.Typical())), PolishFloor))
}

// lapsKept is how many of the last iterations Laps keeps.
const lapsKept = 15

// Laps times a loop's iterations, keeping the last lapsKept, for
// PolishDeadline. The zero Laps is ready once Start is called.
type Laps struct {
	prev time.Time
	d    [lapsKept]time.Duration
	n    int // the laps recorded, all told
}

// Start marks the loop's start (the first lap's).
func (l *Laps) Start(now time.Time) { l.prev = now }

// Lap ends an iteration at now (the next one starts there).
func (l *Laps) Lap(now time.Time) {
	l.d[l.n%lapsKept] = now.Sub(l.prev)
	l.n++
	l.prev = now
}

// Typical is the median of the kept laps but the run's first (the lower
// middle of an even count; the first lap alone when it is the only one;
// zero before any). The mean since the loop's start, which this replaced,
// counted the first iteration (the first primal check, the parts' caches
// cold) and the last (the last primal check, in DD-ADMM's loop) at their
// whole weight: on a 3-iteration 10^7-variable run it was 1.4 times the
// middle iteration, and so was the polish.
func (l *Laps) Typical() time.Duration {
	k := min(l.n, lapsKept)
	if k == 0 {
		return 0
	}
	var buf [lapsKept]time.Duration
	d := append(buf[:0], l.d[:k]...)
	if l.n <= lapsKept && k > 1 {
		d = d[1:] // the first lap, still kept (it is at index 0)
	}
	slices.Sort(d)
	return d[(len(d)-1)/2]
}
