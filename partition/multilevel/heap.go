package multilevel

// gainHeap is an indexed binary max-heap of vertices keyed by gain, the
// priority queue of the Fiduccia-Mattheyses refinement (Fiduccia &
// Mattheyses, "A linear-time heuristic for improving network partitions",
// DAC 1982). It is backed by flat arrays; loc[v] is v's index in the heap
// or -1, so membership, key updates and removals are O(log n). Equal keys
// are served in a deterministic order.
type gainHeap struct {
	keys []int64
	vs   []int32
	loc  []int32
}

func newGainHeap(n int) *gainHeap {
	h := &gainHeap{loc: make([]int32, n)}
	for i := range h.loc {
		h.loc[i] = -1
	}
	return h
}

// reset empties the heap in time proportional to its size.
func (h *gainHeap) reset() {
	for _, v := range h.vs {
		h.loc[v] = -1
	}
	h.keys, h.vs = h.keys[:0], h.vs[:0]
}

func (h *gainHeap) contains(v int32) bool { return h.loc[v] >= 0 }

func (h *gainHeap) swap(i, j int) {
	h.keys[i], h.keys[j] = h.keys[j], h.keys[i]
	h.vs[i], h.vs[j] = h.vs[j], h.vs[i]
	h.loc[h.vs[i]] = int32(i)
	h.loc[h.vs[j]] = int32(j)
}

func (h *gainHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.keys[p] >= h.keys[i] {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *gainHeap) down(i int) {
	n := len(h.vs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.keys[r] > h.keys[l] {
			c = r
		}
		if h.keys[i] >= h.keys[c] {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// push inserts v (not in the heap) with the given key.
func (h *gainHeap) push(v int32, key int64) {
	h.keys = append(h.keys, key)
	h.vs = append(h.vs, v)
	h.loc[v] = int32(len(h.vs) - 1)
	h.up(len(h.vs) - 1)
}

// update changes the key of v, which is in the heap.
func (h *gainHeap) update(v int32, key int64) {
	i := int(h.loc[v])
	old := h.keys[i]
	h.keys[i] = key
	if key > old {
		h.up(i)
	} else if key < old {
		h.down(i)
	}
}

// remove deletes v, which is in the heap.
func (h *gainHeap) remove(v int32) {
	i := int(h.loc[v])
	last := len(h.vs) - 1
	if i != last {
		h.swap(i, last)
	}
	h.keys, h.vs = h.keys[:last], h.vs[:last]
	h.loc[v] = -1
	if i < last {
		h.up(i)
		h.down(i)
	}
}

// pop removes and returns the vertex of largest key; ok is false when the
// heap is empty.
func (h *gainHeap) pop() (v int32, key int64, ok bool) {
	if len(h.vs) == 0 {
		return -1, 0, false
	}
	v, key = h.vs[0], h.keys[0]
	h.remove(v)
	return v, key, true
}
