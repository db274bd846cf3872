package launch

import (
	"strings"
	"testing"
)

// TestTargetCheck: each bad setting of a distributed run is an input
// error naming its flag; a good target passes.
func TestTargetCheck(t *testing.T) {
	raft := func() *Raft {
		return &Raft{ID: "a", Bind: "127.0.0.1:1", Peers: "a=127.0.0.1:1", Dir: "d", Replicas: 1}
	}
	cases := []struct {
		t               Target
		external, local bool
		want            string
	}{
		{Target{Workers: 2}, false, true, ""},
		{Target{Workers: 0}, false, false, "--workers: 0 < 1"},
		{Target{Workers: 1, Checkpoints: Checkpoints{Every: -1}}, false, false, "--checkpoint-every: -1 < 0"},
		{Target{Workers: 1, Checkpoints: Checkpoints{Interval: -1}}, false, false, "--checkpoint-interval: -1ns is negative"},
		{Target{Workers: 1, Raft: &Raft{ID: "a"}}, true, false, "Raft needs all of"},
		{Target{Workers: 1, Raft: raft()}, false, false, "give --nats URL"},
		{Target{Workers: 1, Raft: raft()}, true, false, "the same --job ID"},
		{Target{Workers: 1, Job: "j", Raft: raft()}, true, true, "--local is for a single coordinator"},
		{Target{Workers: 1, Job: "j", Raft: raft()}, true, false, ""},
		{Target{Workers: 1, Checkpoints: Checkpoints{Resume: true}}, false, false, "--resume needs --checkpoint-dir"},
		{Target{Workers: 1, Checkpoints: Checkpoints{Resume: true, Dir: "d"}}, false, false, "--resume needs the --job"},
	}
	for i, c := range cases {
		err := c.t.Check(c.external, c.local)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: %v", i, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !IsInput(err)):
			t.Errorf("%d: got %v, want an input error with %q", i, err, c.want)
		}
	}
}

// The search's workers read the whole converted file: --parts nats, which
// ships only parts, is refused with --exact and with --anytime asked for,
// and taken otherwise.
func TestPartsNATSRefusesTheSearch(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"exact", "true"}, "run --parts nats: the branch and bound"},
		{[]string{"anytime", "true", "time-limit", "10"}, "run --parts nats: the branch and bound"},
		{nil, ""},
	} {
		j := distributedJob(t, c.set...)
		tg := Target{Workers: 2, Sharded: &Sharded{Path: "m.uai", Parts: PartsNATS}}
		err := tg.CheckSharded(j, false)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.set, err, c.want)
		}
	}
}
