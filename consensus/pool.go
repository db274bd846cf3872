package consensus

import (
	"sync"
	"sync/atomic"
)

// pool runs a loop body over fixed chunks on persistent goroutines. Chunks
// are claimed dynamically, but every chunk writes only its own outputs, so
// results do not depend on the number of goroutines or on scheduling.
// Starting a phase allocates nothing.
type pool struct {
	threads int
	work    []chan struct{}
	wg      sync.WaitGroup
	next    atomic.Int64
	chunks  int
	body    func(worker, chunk int)
}

func newPool(threads int) *pool {
	p := &pool{threads: threads}
	for w := 1; w < threads; w++ {
		ch := make(chan struct{})
		p.work = append(p.work, ch)
		go func(w int, ch chan struct{}) {
			for range ch {
				p.drain(w)
				p.wg.Done()
			}
		}(w, ch)
	}
	return p
}

func (p *pool) drain(w int) {
	for {
		c := int(p.next.Add(1)) - 1
		if c >= p.chunks {
			return
		}
		p.body(w, c)
	}
}

// run calls body(worker, c) for every chunk c in [0, chunks) and waits.
func (p *pool) run(chunks int, body func(worker, chunk int)) {
	p.chunks = chunks
	p.body = body
	p.next.Store(0)
	p.wg.Add(len(p.work))
	for _, ch := range p.work {
		ch <- struct{}{}
	}
	p.drain(0)
	p.wg.Wait()
}

// close stops the goroutines.
func (p *pool) close() {
	for _, ch := range p.work {
		close(ch)
	}
}
