package metrics

import (
	"errors"

	"github.com/ddrun/ddrun/solver"
)

// Observed returns progress, reporting to m too (progress alone when m is
// nil). The solvers report every iteration (a console throttles what it
// prints), so the gauges follow every iteration: a few atomic stores each.
func (m *Metrics) Observed(progress func(solver.Progress)) func(solver.Progress) {
	switch {
	case m == nil:
		return progress
	case progress == nil:
		return m.ObserveProgress
	}
	return func(p solver.Progress) {
		m.ObserveProgress(p)
		progress(p)
	}
}

// FollowRaft makes a Raft member ready only while it leads or follows a
// leader it knows (it has joined the group), and its leader series the
// group's view: isLeader and leader are the member's (cluster's Raft
// node).
func (m *Metrics) FollowRaft(isLeader func() bool, leader func() (string, string)) {
	m.SetLeaderFunc(isLeader)
	m.AddReadyCheck(func() error {
		if id, _ := leader(); id == "" && !isLeader() {
			return errors.New("raft: no leader known yet (joining the group)")
		}
		return nil
	})
}
