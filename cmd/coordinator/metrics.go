package main

import (
	"context"
	"errors"

	"github.com/ddrun/ddrun/internal/cli"
	"github.com/ddrun/ddrun/metrics"
	"github.com/ddrun/ddrun/solver"
)

// startMetrics starts the --metrics endpoint, not ready until NATS is
// reached, and returns the function that stops it; without --metrics it
// does nothing (r.obs stays nil). Its address goes to con as metrics=URL
// (a record with the URL under --log-format json).
func (r *runFlags) startMetrics(ctx context.Context, con *cli.Console) (stop func(), err error) {
	if r.metrics == "" {
		return func() {}, nil
	}
	m, err := metrics.New(metrics.Options{Role: metrics.Coordinator})
	if err != nil {
		return nil, err
	}
	srv, err := m.Start(ctx, r.metrics, nil)
	if err != nil {
		return nil, usagef("--metrics: %v", err)
	}
	con.Print("metrics", "metrics="+srv.URL(), "metrics", srv.URL())
	m.SetReady(false, "connecting to NATS")
	m.SetLeader(true) // a Raft member says otherwise (raftReadiness)
	r.obs = m
	return func() { _ = srv.Close() }, nil
}

// observed returns progress, reporting to the metrics too. The solvers
// report every iteration (the console throttles what it prints), so the
// gauges follow every iteration: a few atomic stores each.
func (r *runFlags) observed(progress func(solver.Progress)) func(solver.Progress) {
	m := r.obs
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

// raftReadiness makes a Raft member ready only while it leads or follows
// a leader it knows (it has joined the group), and its leader series the
// group's view.
func raftReadiness(m *metrics.Metrics, isLeader func() bool, leader func() (string, string)) {
	m.SetLeaderFunc(isLeader)
	m.AddReadyCheck(func() error {
		if id, _ := leader(); id == "" && !isLeader() {
			return errors.New("raft: no leader known yet (joining the group)")
		}
		return nil
	})
}
