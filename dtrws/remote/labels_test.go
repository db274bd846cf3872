package remote

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ddrun/ddrun/transport"
)

// A part's labels are asked up to labelWindow pieces ahead and come in
// order; a worker's answers are checked as they come: a piece short of
// labelPiece that does not end the part, or a last one that ends it too
// early, fails the part instead of leaving variables without a state.
func TestLabelledWindowChecked(t *testing.T) {
	labelPiece = 4
	defer func() { labelPiece = 1 << 16 }()
	const vars = 30 // 8 pieces (7 of 4, then 2): more than the window
	honest := func(from int) int { return min(labelPiece, vars-from) }
	for _, c := range []struct {
		name string
		cut  func(from int) int // how many variables the worker answers from from
		last func(end int) bool // whether the worker calls a piece ending at end the last (nil: when it is)
		want string             // "": every variable arrives
	}{
		{"honest", honest, nil, ""},
		{"short", func(from int) int { return min(labelPiece-1, vars-from) }, nil, "for a part of 30 asked from 0"},
		{"empty", func(from int) int { return 0 }, nil, "for a part of 30 asked from 0"},
		{"early end", honest, func(end int) bool { return end >= 12 }, "(last true) for a part of 30 asked from 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := transport.NewInProc()
			defer tr.Close()
			job, worker := "labels", "w0"
			co := &coordinator{tr: tr, opts: Options{Job: job, StepTimeout: 10 * time.Second, LostAfter: time.Hour}, cid: 7,
				seq: transport.NewSequence(), workers: []string{worker}, inbox: map[string]chan message{worker: make(chan message, 8)},
				seen: map[string]time.Time{worker: time.Now()}}
			answers, err := tr.Subscribe(answersWildcard(job), co.onAnswer)
			if err != nil {
				t.Fatal(err)
			}
			defer answers.Unsubscribe()
			// The worker: its orders in turn, each answered with the
			// variables 100+v and labels v from the order's From.
			var mu sync.Mutex
			var ahead int // the most orders outstanding at once
			var asked, answered int
			orders := make(chan labelsBody, 16)
			sub, err := tr.Subscribe(orderSubject(job, worker), func(_ string, data []byte) {
				_, raw, err := transport.Decode(data)
				var b labelsBody
				if err == nil && transport.DecodeBody(raw, &b) == nil {
					mu.Lock()
					asked++
					ahead = max(ahead, asked-answered)
					mu.Unlock()
					orders <- b
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				seq := transport.NewSequence()
				for {
					var o labelsBody
					select {
					case <-ctx.Done():
						return
					case o = <-orders:
					}
					n := c.cut(int(o.From))
					a := labelledBody{CID: o.CID, Seq: o.Seq, From: o.From, Last: int(o.From)+n == vars}
					if c.last != nil {
						a.Last = c.last(int(o.From) + n)
					}
					for v := int(o.From); v < int(o.From)+n; v++ {
						a.Vars, a.Labels = append(a.Vars, int32(100+v)), append(a.Labels, int32(v))
					}
					mu.Lock()
					answered++
					mu.Unlock()
					data, err := transport.Encode(transport.Header{Job: job, From: worker, Seq: seq.Next()}, a)
					if err == nil {
						err = tr.Publish(ctx, answerSubject(job, worker), data)
					}
					if err != nil {
						return
					}
				}
			}()
			l := &link{c: co, worker: worker, vars: vars}
			var got []int32
			err = l.labelled(context.Background(), func(vs, x []int32) error {
				for i, v := range vs {
					if v != 100+x[i] {
						t.Errorf("variable %d with label %d", v, x[i])
					}
				}
				got = append(got, x...)
				return nil
			})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("honest worker: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			case c.want == "" && len(got) != vars:
				t.Errorf("%d of %d labels arrived", len(got), vars)
			}
			for i, x := range got {
				if int(x) != i {
					t.Errorf("label %d arrived at %d: out of order", x, i)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if ahead > labelWindow {
				t.Errorf("%d orders outstanding at once, the window is %d", ahead, labelWindow)
			}
		})
	}
}
