package launch

import (
	"github.com/ddrun/ddrun/engine"
	"github.com/ddrun/ddrun/jobstate"
)

// This file checks a distributed run's target before anything is read
// from the workers or connected: what a front end asked for (the number
// of workers, checkpoints, a Raft group) and whether the job's mode runs
// there. Its messages name the command line's flags, as Sharded.Check's
// do; errors are input errors (IsInput).

// CheckMode rejects a job that command ("run") cannot distribute to the
// target (engine's Job.Distributable), and the settings that distributed
// branch and bound (--exact) does not take: it keeps no checkpoints and
// runs on one coordinator.
func (t *Target) CheckMode(j *engine.Job, command string) error {
	if !j.Settings.Exact {
		return j.Distributable(command)
	}
	c := t.Checkpoints
	switch {
	case t.Raft != nil:
		return inputf("%s: --exact runs on one coordinator (no --raft)", command)
	case c.Dir != "" || c.Resume:
		return inputf("%s: --exact keeps no checkpoints (--checkpoint-dir, --resume)", command)
	}
	return nil
}

// CheckSharded rejects what the sharded target cannot do with job j
// (Sharded.Check) and, for --exact, the settings branch and bound does not
// take (CheckMode).
func (t *Target) CheckSharded(j *engine.Job, evidence bool) error {
	if s := &j.Settings; t.Sharded.Parts == PartsNATS && (s.Exact || s.AnytimeOn && s.Given["anytime"]) {
		// The search's workers read the whole converted file (dsearch.RunFile).
		return inputf("run --parts nats: the branch and bound of --exact and --anytime has every worker read the whole model file: workers that share a filesystem with the coordinator (--parts auto or file)")
	}
	if err := t.Sharded.Check(j, evidence); err != nil || !j.Settings.Exact {
		return err
	}
	return t.CheckMode(j, "run")
}

// Check checks the target's settings: at least one worker, the
// checkpoints' schedule, the Raft group (Raft.check) and a resume (a
// checkpoint directory and the job to continue; a Raft group resumes by
// itself). external says whether the workers' NATS server is an external
// one (the members of a Raft group share it), local whether the front
// end starts the workers itself.
func (t *Target) Check(external, local bool) error {
	if t.Workers < 1 {
		return inputf("--workers: %d < 1", t.Workers)
	}
	if err := t.Checkpoints.check(); err != nil {
		return err
	}
	if t.Raft != nil {
		if err := t.Raft.check(external, t.Job, local); err != nil {
			return err
		}
	}
	if t.Checkpoints.Resume && t.Checkpoints.Dir == "" {
		return inputf("--resume needs --checkpoint-dir (with Raft, a job resumes by itself)")
	}
	if t.Checkpoints.Resume && t.Job == "" {
		return inputf("--resume needs the --job to continue")
	}
	return nil
}

// check checks the checkpoints' schedule.
func (c *Checkpoints) check() error {
	switch {
	case c.Every < 0:
		return inputf("--checkpoint-every: %d < 0", c.Every)
	case c.Interval < 0:
		return inputf("--checkpoint-interval: %v is negative", c.Interval)
	}
	return nil
}

// check checks a Raft group's settings: every one of this member's, an
// external NATS server the group shares (external), the job id the
// members share, no workers started by the front end (local: a single
// coordinator's), the checkpoint bucket's replicas and the peers.
func (r *Raft) check(external bool, job string, local bool) error {
	switch {
	case r.ID == "" || r.Bind == "" || r.Peers == "" || r.Dir == "":
		return inputf("Raft needs all of --raft-id, --raft-bind, --raft-peers and --raft-dir")
	case !external:
		return inputf("Raft: the coordinators share an external NATS server: give --nats URL")
	case job == "":
		return inputf("Raft: give the group's coordinators the same --job ID")
	case local:
		return inputf("Raft: --local is for a single coordinator; start the workers yourself")
	case r.Replicas < 1 || r.Replicas > 5:
		return inputf("--checkpoint-replicas: %d not in [1, 5]", r.Replicas)
	}
	if _, err := jobstate.ParsePeers(r.Peers); err != nil {
		return inputf("--raft-peers: %v", err)
	}
	return nil
}

// NoSearch says why an anytime job with settings s on the target has no
// branch and bound phase, naming the flag that decides it (what) and the
// reason (why): the search runs on one coordinator, not a Raft group; on
// a sharded run, each worker reads the whole model for it, which --anytime
// must ask for (--time-limit alone keeps the parts only: the relaxation
// the class chooses). Both are "" when the search can run.
func (t *Target) NoSearch(s *engine.Settings) (what, why string) {
	switch {
	case t.Raft != nil:
		return "--raft", "the search runs on one coordinator"
	case t.Sharded != nil && !s.Given["anytime"]:
		return "--sharded", "its search would have every worker read the whole model (--anytime asks for it)"
	}
	return "", ""
}
