package solver

import "time"

// The final polish of a sharded run (the boundary moves after the last
// iteration, distributed TRW-S's and DD-ADMM's) starts a move only while
// it is expected to end within PolishIters of the run's mean iteration
// time, or PolishFloor, whichever is longer, from the polish's start: on
// a large model each move costs a few passes over every part (copies, the
// exact score), and the final primal should cost about what two
// iterations do (issue 25); on a small one the floor leaves the moves
// their course, whatever the network's latency.
const (
	PolishIters = 1.0
	PolishFloor = time.Second
)

// PolishDeadline is when a final polish that starts at now stops starting
// moves, after iterations iterations that took loop in all.
func PolishDeadline(now time.Time, loop time.Duration, iterations int) time.Time {
	return now.Add(max(time.Duration(PolishIters*float64(loop)/float64(max(1, iterations))), PolishFloor))
}
