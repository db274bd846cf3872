package launch

import (
	"context"

	"github.com/ddrun/ddrun/engine"
)

// earlyConnect starts a --local sharded run's connection (its NATS server
// and worker processes, Target.Connect) while the model is converted and
// planned, instead of after the plan: the workers are up and announced
// when the parts are ready to load. A job that the model's class cannot
// refuse (any but --algo trws, engine.Job.CheckClass) starts it once the
// first factor is read (first: the conversion wrote one, or the plan's
// first pass read one of an indexed input), so an input that cannot be
// opened, or an indexed one whose cardinalities or unaries the plan
// refuses, starts nothing; a model found corrupt or unshardable later has
// started its workers, which the front end stops with the session (a
// model that the plan refuses with a fallback to the whole model runs on
// them). Another starts once the first pass has read the model through
// and found the job's class runnable (cut), so that a refused job starts
// no workers.
type earlyConnect struct {
	ctx     context.Context
	connect func(ctx context.Context) (*Session, error)
	done    chan struct{} // closed once connect returned (nil: not started)
	s       *Session
	err     error
}

// early replaces t.Connect by an earlyConnect's, when t is a --local
// sharded run that connects (nil otherwise: every stage connects as it
// did). The caller must settle it before returning.
func early(ctx context.Context, t *Target) *earlyConnect {
	if t.Sharded == nil || !t.Sharded.Local || t.Connect == nil || t.Raft != nil {
		return nil
	}
	e := &earlyConnect{ctx: ctx, connect: t.Connect}
	t.Connect = e.wait
	return e
}

// start connects in the background (once).
func (e *earlyConnect) start() {
	if e == nil || e.done != nil {
		return
	}
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		e.s, e.err = e.connect(e.ctx)
	}()
}

// wait is Target.Connect: the background connection's result (started
// now when the plan did not start it).
func (e *earlyConnect) wait(context.Context) (*Session, error) {
	e.start()
	<-e.done
	return e.s, e.err
}

// settle waits for a connection started in the background, so that the
// front end, which closes the session once Run returns, sees it.
func (e *earlyConnect) settle() {
	if e != nil && e.done != nil {
		<-e.done
	}
}

// first is planShards' callback at the first factor read: it starts the
// connection when the class cannot refuse the job (nil without an early
// connection, or when it can).
func (e *earlyConnect) first(j *engine.Job, t Target) func() {
	if e == nil || j.AskedTRWS() || refuseDTRWS(j, t) != nil {
		return nil
	}
	return e.start
}

// cut is planShards' callback once the first pass has read the model:
// it starts the connection unless the job will be refused (the refusals
// of runShardedChoice that need no more than the class), so that a
// refused job starts no workers (nil without an early connection).
func (e *earlyConnect) cut(j *engine.Job, t Target) func(engine.Class) {
	if e == nil {
		return nil
	}
	return func(c engine.Class) {
		if refuseDTRWS(j, t) == nil && j.CheckClass(c) == nil {
			e.start()
		}
	}
}
