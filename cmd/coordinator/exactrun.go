package main

import (
	"context"
	"io"

	"github.com/ddrun/ddrun/cluster"
	"github.com/ddrun/ddrun/dsearch"
	"github.com/ddrun/ddrun/internal/cli"
)

// checkExact rejects the flags of run that distributed branch and bound
// does not take: it keeps no checkpoints, runs on one coordinator and
// holds the whole model.
func (r *runFlags) checkExact() error {
	switch {
	case r.sharded:
		return usagef("run: --exact and --sharded: branch and bound ships the whole model to every worker")
	case r.raft.enabled():
		return usagef("run: --exact runs on one coordinator (no --raft)")
	case r.ck.dir != "" || r.ck.resume:
		return usagef("run: --exact keeps no checkpoints (--checkpoint-dir, --resume)")
	}
	return nil
}

// runExact is `run --exact`: branch and bound with the coordinator keeping
// the open subtrees and the workers searching them (package dsearch), over
// the same NATS transport, sealed with the job key as the job protocol is.
// Its result prints as solve --exact's does.
func runExact(ctx context.Context, sp spec, f solveFlags, r runFlags, stdout io.Writer, con *cli.Console) error {
	if err := r.checkExact(); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	settings, err := sp.SearchSettings()
	if err != nil {
		return settingError(err)
	}
	log := con.Logger()
	ses, err := r.session(ctx, &f, con)
	if err != nil {
		return err
	}
	defer ses.close()
	sealed, out := ses.tr, ses.out
	o := dsearch.Options{Job: r.job, Workers: r.workers, Wait: r.wait, Settings: settings, Tol: sp.Settings.Tol,
		TimeLimit: sp.Settings.TimeLimit, LostAfter: r.lostAfter, Logger: log}
	res, st, err := dsearch.Run(ctx, sealed, sp.Model, sp.Evidence, o, r.observed(out.progress()))
	if err != nil {
		return err
	}
	r.obs.ObserveResult(res)
	if !f.quiet {
		con.Close()
		printSearchStats(con, st, res.Elapsed)
	}
	return report(res, sp, f, cluster.JobInfo{Workers: st.Workers}, out, stdout)
}
