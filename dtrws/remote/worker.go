package remote

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ddrun/ddrun/dtrws"
	"github.com/ddrun/ddrun/internal/jobworker"
	"github.com/ddrun/ddrun/shard"
	"github.com/ddrun/ddrun/transport"
)

// WorkerOptions configure a worker's side (Serve).
type WorkerOptions struct {
	Name   string // a transport.ValidName, unique among the workers
	Logger *slog.Logger
	// ReleaseAfter: a job whose coordinator sent nothing this long is
	// dropped (default 2 minutes).
	ReleaseAfter time.Duration
	// Receive, when not nil, prepares a part's spec to be read before it
	// is loaded (launch's parts received over the transport, or the file
	// at the spec's path where the worker's directories allow it); done
	// is called once it is loaded. nil: the part is read from the file at
	// the spec's path when Files allow it.
	Receive func(ctx context.Context, spec *shard.Spec) (done func(), err error)
	// Files bound the model files a part's spec may name (shard.Dirs:
	// under its state directory or model roots); zero: no part is loaded.
	Files shard.Dirs
}

// helloEvery is how often a worker announces itself.
const helloEvery = 500 * time.Millisecond

// wjob is the job a worker holds: its part once loaded, and the orders
// queued for it.
type wjob struct {
	name   string
	cid    uint64
	last   time.Time // the coordinator's last order
	orders chan order
	cancel context.CancelFunc
}

// order is one message of the job, decoded, for the job's goroutine.
type order struct {
	kind transport.Kind
	open *openBody
	step *stepBody
	seq  uint64
	from int32 // a labels order's first variable
}

type wserver struct {
	*jobworker.Sender
	opts WorkerOptions

	mu  sync.Mutex
	job *wjob
}

// Serve runs the parts of distributed TRW-S jobs until ctx ends, one job
// at a time: it announces itself, loads the part the first coordinator
// that opens a job on it names, answers its orders in turn, and is free
// again when the job is closed or its coordinator falls silent.
func Serve(ctx context.Context, tr transport.Transport, opts WorkerOptions) error {
	sender, err := jobworker.NewSender(tr, opts.Name, opts.Logger, "trws: ")
	if err != nil {
		return err
	}
	if opts.ReleaseAfter <= 0 {
		opts.ReleaseAfter = 2 * time.Minute
	}
	s := &wserver{Sender: sender, opts: opts}
	sub, err := tr.Subscribe(orderWildcard(opts.Name), s.onOrder)
	if err != nil {
		return fmt.Errorf("subscribing for TRW-S orders: %w", err)
	}
	defer sub.Unsubscribe()
	defer s.release(nil)
	loop := jobworker.Loop{Solicit: solicitSubject, Solicitations: "TRW-S solicitations", HelloEvery: helloEvery,
		Announce: s.announce, Lapse: s.lapse}
	return loop.Run(ctx, tr)
}

// publish sends body on subject under the job's header.
func (s *wserver) publish(ctx context.Context, subject string, job string, body any) {
	s.Sender.Publish(ctx, subject, transport.Header{Job: job}, body)
}

func (s *wserver) announce(ctx context.Context) {
	s.mu.Lock()
	h := helloBody{}
	if s.job != nil {
		h.Job = s.job.name
	}
	s.mu.Unlock()
	s.publish(ctx, helloSubject, "", h)
}

// lapse drops a job whose coordinator fell silent.
func (s *wserver) lapse() {
	s.mu.Lock()
	j := s.job
	silent := j != nil && time.Since(j.last) > s.opts.ReleaseAfter
	s.mu.Unlock()
	if silent {
		s.Log.Warn("trws: job dropped, its coordinator is silent", "job", j.name)
		s.release(j)
	}
}

// release drops job j if it is still the worker's job (any job when j is
// nil). By identity, not by name: a job of the same name opened again
// after j was closed is not j's to drop.
func (s *wserver) release(j *wjob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job == nil || j != nil && s.job != j {
		return
	}
	s.job.cancel()
	s.job = nil
}

// onOrder takes what a coordinator sends on the worker's order subject:
// an open starts a job when the worker is free; the job's other orders go
// to its goroutine, in arrival order.
func (s *wserver) onOrder(subject string, data []byte) {
	h, raw, err := transport.Decode(data)
	if err != nil {
		s.Dropped("undecodable message dropped", "err", err)
		return
	}
	if subject != orderSubject(h.Job, s.opts.Name) {
		s.Dropped("message for another job or worker dropped", "subject", subject)
		return
	}
	var o order
	var cid uint64
	o.kind = h.Kind
	switch h.Kind {
	case kindOpen:
		o.open = &openBody{}
		err, cid = transport.DecodeBody(raw, o.open), o.open.CID
	case kindStep:
		o.step = &stepBody{}
		err, cid = transport.DecodeBody(raw, o.step), o.step.CID
	case kindLabels:
		var b labelsBody
		err, cid, o.seq, o.from = transport.DecodeBody(raw, &b), b.CID, b.Seq, b.From
	case kindClose:
		var b closeBody
		err, cid = transport.DecodeBody(raw, &b), b.CID
	default:
		s.Dropped("message of an unknown kind dropped", "job", h.Job, "kind", h.Kind)
		return
	}
	if err != nil {
		s.Dropped("undecodable order dropped", "job", h.Job, "err", err)
		return
	}
	s.mu.Lock()
	j := s.job
	if h.Kind == kindOpen && j == nil {
		ctx, cancel := context.WithCancel(context.Background())
		j = &wjob{name: h.Job, cid: cid, orders: make(chan order, 16), cancel: cancel, last: time.Now()}
		s.job = j
		go s.run(ctx, j)
	}
	s.mu.Unlock()
	if j == nil {
		// An order of a job this worker no longer (or never) held: a late
		// close or step after a release, or a forgery.
		s.Dropped("order of a job this worker does not hold dropped", "job", h.Job)
		return
	}
	if j.name != h.Job || j.cid != cid {
		if h.Kind == kindOpen {
			s.publish(context.Background(), answerSubject(h.Job, s.opts.Name), h.Job, openedBody{CID: cid, Err: "busy with TRW-S job " + j.name})
			return
		}
		s.Dropped("order of a job this worker does not hold dropped", "job", h.Job)
		return
	}
	if h.Kind == kindClose {
		s.release(j)
		s.Log.Info("trws: job closed", "job", j.name)
		return
	}
	s.mu.Lock()
	j.last = time.Now()
	s.mu.Unlock()
	select {
	case j.orders <- o:
	default:
		s.Dropped("order dropped: the job's queue is full", "job", j.name)
	}
}

// run is a job's goroutine: it loads the part on the open and answers
// every order in turn.
func (s *wserver) run(ctx context.Context, j *wjob) {
	answers := answerSubject(j.name, s.opts.Name)
	var link *dtrws.LocalLink
	var piece *shard.Piece
	var count int
	var out dtrws.StepOut
	var labels []int32 // the kept labels, taken by a labels order from 0
	for {
		var o order
		select {
		case <-ctx.Done():
			return
		case o = <-j.orders:
		}
		switch o.kind {
		case kindOpen:
			if link != nil {
				continue // a repeat
			}
			var err error
			piece, err = s.load(ctx, o.open)
			if err == nil {
				link, err = pieceLink(piece)
			}
			if err != nil {
				// Released before the refusal is sent, so that an open the
				// coordinator sends on reading it finds this worker free.
				s.release(j)
				s.publish(context.Background(), answers, j.name, openedBody{CID: j.cid, Err: err.Error()})
				return
			}
			count = len(piece.Boundary)
			s.Log.Info("trws: part loaded", "job", j.name, "variables", len(piece.Vars), "factors", piece.Factors(), "boundary", count)
			s.publish(ctx, answers, j.name, openedBody{CID: j.cid, Width: link.Width(), Count: count, Vars: len(piece.Vars)})
		case kindStep:
			a := steppedBody{CID: j.cid, Seq: o.step.Seq}
			in, err := checkStep(o.step, widthOf(link), count)
			if err == nil && link == nil {
				err = fmt.Errorf("a step before the part is loaded")
			}
			if err == nil {
				err = link.Step(ctx, &in, &out)
			}
			if err != nil {
				a.Err = err.Error()
			} else {
				a.Bound, a.Beliefs, a.Chains, a.Score, a.Local = out.Bound, out.Beliefs, out.Chains, out.Score, out.Local
			}
			s.publish(ctx, answers, j.name, a)
		case kindLabels:
			a := labelledBody{CID: j.cid, Seq: o.seq, From: o.from}
			var err error
			switch {
			case link == nil:
				err = fmt.Errorf("labels before the part is loaded")
			case o.from == 0:
				labels, err = link.Labels(ctx)
			case labels == nil || o.from < 0 || int(o.from) > len(labels):
				err = fmt.Errorf("labels from variable %d of a part of %d whose labels were not taken", o.from, len(piece.Vars))
			}
			if err != nil {
				a.Err = err.Error()
			} else {
				end := min(int(o.from)+labelPiece, len(labels))
				a.Labels, a.Last = labels[o.from:end], end == len(labels)
				a.Vars = make(transport.Int32s, 0, end-int(o.from))
				for _, v := range piece.Vars[o.from:end] {
					a.Vars = append(a.Vars, int32(v))
				}
			}
			s.publish(ctx, answers, j.name, a)
		}
	}
}

// pieceLink prepares TRW-S on a piece (its Potts factors flat when it
// holds them so).
func pieceLink(pc *shard.Piece) (*dtrws.LocalLink, error) {
	if q := pc.Potts; q != nil {
		return dtrws.NewLocalLinkPotts(pc.Model, q.I, q.J, q.W, pc.Boundary)
	}
	return dtrws.NewLocalLink(pc.Model, pc.Boundary)
}

func widthOf(l *dtrws.LocalLink) int {
	if l == nil {
		return 0
	}
	return l.Width()
}

// load reads the part an open names.
func (s *wserver) load(ctx context.Context, o *openBody) (*shard.Piece, error) {
	spec, err := shard.DecodeSpec(o.Spec)
	if err != nil {
		return nil, err
	}
	if spec.NumVars > math.MaxInt32 {
		return nil, fmt.Errorf("%d variables: more than this protocol numbers", spec.NumVars)
	}
	if s.opts.Receive != nil {
		// It reads the file only where Files allow, or receives the part.
		done, err := s.opts.Receive(ctx, spec)
		if err != nil {
			return nil, err
		}
		defer done()
	} else if spec.Path, err = s.opts.Files.ModelPath(spec.Path); err != nil {
		return nil, err
	}
	return shard.LoadPiece(ctx, spec, o.Copies)
}
