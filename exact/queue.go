package exact

// Rank is what a best-first search orders its open nodes by: the largest
// Bound first, among equal bounds the deepest (a dive towards a leaf, and
// so an incumbent), then the largest Pref.
type Rank struct {
	Bound float64
	Depth int
	Pref  float64
}

// Queue is the open nodes of a best-first search, largest Rank first: a
// container/heap.Interface (heap.Push, heap.Pop). It is this package's
// queue and the distributed search's (package dsearch).
type Queue[N interface{ Rank() Rank }] []N

func (q Queue[N]) Len() int { return len(q) }

func (q Queue[N]) Less(i, j int) bool {
	a, b := q[i].Rank(), q[j].Rank()
	if a.Bound != b.Bound {
		return a.Bound > b.Bound
	}
	if a.Depth != b.Depth {
		return a.Depth > b.Depth
	}
	return a.Pref > b.Pref
}

func (q Queue[N]) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

// Push and Pop are for container/heap: use heap.Push and heap.Pop.
func (q *Queue[N]) Push(x any) { *q = append(*q, x.(N)) }

func (q *Queue[N]) Pop() any {
	old := *q
	n := old[len(old)-1]
	var none N
	old[len(old)-1] = none
	*q = old[:len(old)-1]
	return n
}

func (q Queue[N]) top() float64 { return q[0].Rank().Bound }
func (q Queue[N]) empty() bool  { return len(q) == 0 }
