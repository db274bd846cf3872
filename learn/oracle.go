package learn

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"

	"github.com/ddrun/ddrun/consensus"
	"github.com/ddrun/ddrun/exact"
	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/slaves"
)

// SeqScratch is the workspace of the sequence oracles; one per goroutine.
type SeqScratch struct {
	theta, alpha, next []float64
	arg                []int32
	y                  []int32
}

func (sc *SeqScratch) grow(n, L int) {
	if cap(sc.theta) < n*L {
		sc.theta = make([]float64, n*L)
		sc.arg = make([]int32, n*L)
	}
	if cap(sc.alpha) < L {
		sc.alpha = make([]float64, L)
		sc.next = make([]float64, L)
	}
	if cap(sc.y) < n {
		sc.y = make([]int32, n)
	}
	sc.theta, sc.arg, sc.alpha, sc.next, sc.y = sc.theta[:n*L], sc.arg[:n*L], sc.alpha[:L], sc.next[:L], sc.y[:n]
}

// SeqEmissions writes sentence s's emission scores theta[t*L+y] =
// <W_y, x_t> (+1 when lossAug and y differs from the true label: the
// Hamming loss of token t) into sc and returns them.
func SeqEmissions(w *Weights, d *SeqData, s int, lossAug bool, sc *SeqScratch) []float64 {
	L := w.Labels
	t0, t1 := d.Start[s], d.Start[s+1]
	sc.grow(t1-t0, L)
	for t := t0; t < t1; t++ {
		th := sc.theta[(t-t0)*L : (t-t0+1)*L]
		idx, val := d.X.Row(t)
		w.scores(idx, val, th)
		if lossAug {
			for y := range th {
				if y != int(d.Y[t]) {
					th[y]++
				}
			}
		}
	}
	return sc.theta
}

// Viterbi maximises sum_t theta[t*L+y_t] + sum_t trans[y_t*L+y_{t+1}] over
// label sequences of length n (plain max-product, O(n L^2)), writes the
// maximiser into y (len n) and returns the maximum. Ties go to the smallest
// label. It allocates nothing once sc has grown.
func Viterbi(theta, trans []float64, n, L int, y []int32, sc *SeqScratch) float64 {
	if cap(sc.alpha) < L {
		sc.alpha, sc.next = make([]float64, L), make([]float64, L)
	}
	if cap(sc.arg) < n*L {
		sc.arg = make([]int32, n*L)
	}
	alpha, next, arg := sc.alpha[:L], sc.next[:L], sc.arg[:n*L]
	copy(alpha, theta[:L])
	for t := 1; t < n; t++ {
		for b := range next {
			next[b] = math.Inf(-1)
		}
		ar := arg[t*L : t*L+L]
		for a, base := range alpha {
			row := trans[a*L : a*L+L]
			a32 := int32(a)
			for b, tv := range row {
				if v := base + tv; v > next[b] {
					next[b] = v
					ar[b] = a32
				}
			}
		}
		th := theta[t*L : t*L+L]
		for b := range next {
			alpha[b] = next[b] + th[b]
		}
	}
	best, bx := math.Inf(-1), 0
	for x, v := range alpha {
		if v > best {
			best, bx = v, x
		}
	}
	y[n-1] = int32(bx)
	for t := n - 1; t > 0; t-- {
		y[t-1] = arg[t*L+int(y[t])]
	}
	return best
}

// SeqHinge returns sentence s's structured hinge loss
// max_y [score(y) + Hamming(y, ybar)] - score(ybar) under w, with the
// loss-augmented maximiser left in sc.y (the structured oracle of BCFW and
// SSG, Viterbi on loss-augmented emissions).
func SeqHinge(w *Weights, d *SeqData, s int, sc *SeqScratch) float64 {
	L := w.Labels
	t0, t1 := d.Start[s], d.Start[s+1]
	n := t1 - t0
	theta := SeqEmissions(w, d, s, true, sc)
	best := Viterbi(theta, w.Trans, n, L, sc.y, sc)
	truth := 0.0
	for t := t0; t < t1; t++ {
		y := int(d.Y[t])
		if y >= L {
			return math.NaN() // Validate rejects this before training
		}
		truth += theta[(t-t0)*L+y]
		if t+1 < t1 {
			truth += w.Trans[y*L+int(d.Y[t+1])]
		}
	}
	return max(best-truth, 0)
}

// ColGenLabels is the label count from which the primal's loss-augmented
// Viterbi goes through slaves.Chain's column generation (exact, Belanger
// et al. 2012: restricted domains grown by reduced costs, O(n L |D|) per
// round instead of O(n L^2), falling back to Viterbi when it would not
// pay) instead of the plain O(n L^2) recursion.
const ColGenLabels = 64

// seqChains keeps one slaves.Chain per sentence length over w's shared
// transition table (the chains keep the table: w must not change while
// they live); one per goroutine.
type seqChains struct {
	w      *Weights
	chains map[int]*slaves.Chain
	sc     SeqScratch
	y      []int
}

// hinge is SeqHinge through the chain's MAP.
func (h *seqChains) hinge(w *Weights, d *SeqData, s int) float64 {
	if h.w != w {
		h.w, h.chains = w, map[int]*slaves.Chain{}
	}
	L := w.Labels
	n := d.Start[s+1] - d.Start[s]
	c := h.chains[n]
	if c == nil {
		c = labelChain(n, w)
		h.chains[n] = c
	}
	theta := SeqEmissions(w, d, s, true, &h.sc)
	if cap(h.y) < n {
		h.y = make([]int, n)
	}
	best := c.MAP(theta[:n*L], h.y[:n])
	return hingeOf(best, w, d, s, theta)
}

// hingeOf returns the structured hinge max(best - score(truth), 0) of
// sentence s, best the loss-augmented maximum and theta its loss-augmented
// emissions (L per token); NaN when a true label is out of range.
func hingeOf(best float64, w *Weights, d *SeqData, s int, theta []float64) float64 {
	L := w.Labels
	t0, t1 := d.Start[s], d.Start[s+1]
	truth := 0.0
	for t := t0; t < t1; t++ {
		y := int(d.Y[t])
		if y >= L {
			return math.NaN()
		}
		truth += theta[(t-t0)*L+y]
		if t+1 < t1 {
			truth += w.Trans[y*L+int(d.Y[t+1])]
		}
	}
	return max(best-truth, 0)
}

// labelChain returns the chain slave of a sentence of n tokens under w:
// L labels per token, w.Trans between consecutive tokens, no emissions
// (they come with each MAP call).
func labelChain(n int, w *Weights) *slaves.Chain {
	cards := make([]int, n)
	trans := make([][]float64, max(n-1, 0))
	for i := range cards {
		cards[i] = w.Labels
	}
	for i := range trans {
		trans[i] = w.Trans
	}
	return slaves.NewChain(cards, nil, trans)
}

// SeqOracleLabels returns the loss-augmented maximiser left by SeqHinge.
func (sc *SeqScratch) Labels() []int32 { return sc.y }

// MLScratch is the workspace of the multilabel oracles; one per goroutine.
type MLScratch struct {
	s []float64
	y []bool
}

// mlUnary writes into sc.s the score of switching label l on (its
// emission score, plus the Hamming loss difference when lossAug:
// +1 for a negative label, -1 for a positive one, the constant being the
// number of positives).
func mlUnary(w *Weights, d *MLData, i int, lossAug bool, sc *MLScratch) (lossConst float64) {
	L := w.Labels
	if cap(sc.s) < L {
		sc.s, sc.y = make([]float64, L), make([]bool, L)
	}
	sc.s, sc.y = sc.s[:L], sc.y[:L]
	idx, val := d.X.Row(i)
	w.scores(idx, val, sc.s)
	if lossAug {
		for y := range sc.s {
			sc.s[y]++
		}
		for _, y := range d.Positive(i) {
			if int(y) < L {
				sc.s[y] -= 2
				lossConst++
			}
		}
	}
	return lossConst
}

// MaxBruteLabels is the largest label count decoded by enumeration.
const MaxBruteLabels = 16

// mlDecode maximises sum_l y_l s_l + sum_{a<b} y_a y_b Pair[a*L+b] over
// y in {0,1}^L into sc.y and returns the maximum: by enumeration in Gray
// code order when L <= MaxBruteLabels, otherwise as a model.Model (binary
// variables, Pair factors) solved exactly by package exact's branch and
// bound over DD-ADMM bounds. exact reports whether the maximum is proved.
func mlDecode(ctx context.Context, w *Weights, sc *MLScratch) (best float64, exactly bool, err error) {
	L := w.Labels
	if L <= MaxBruteLabels {
		return mlBrute(w, sc), true, nil
	}
	return mlEngine(ctx, w, sc)
}

// mlEngine is mlDecode through the inference engine.
func mlEngine(ctx context.Context, w *Weights, sc *MLScratch) (best float64, exactly bool, err error) {
	L := w.Labels
	m := model.New(cardsTwo(L))
	for l := 0; l < L; l++ {
		m.Unary[2*l+1] = sc.s[l]
	}
	for a := 0; a < L; a++ {
		for b := a + 1; b < L; b++ {
			if v := w.Pair[a*L+b]; v != 0 {
				m.Factors = append(m.Factors, model.Factor{Kind: model.Pair, Vars: []int{a, b}, Weight: v})
			}
		}
	}
	if len(m.Factors) == 0 {
		best = 0
		for l, v := range sc.s {
			sc.y[l] = v > 0
			if v > 0 {
				best += v
			}
		}
		return best, true, nil
	}
	opts := consensus.DefaultOptions()
	res, _, err := exact.SolveWarm(ctx, m, nil, exact.ADMM(opts), exact.Options{Tol: 1e-9}, nil)
	if err != nil {
		return 0, false, fmt.Errorf("multilabel decoding: %w", err)
	}
	if len(res.Assignment) != L {
		// Cut short (a cancelled context) before any labelling was found.
		return 0, false, fmt.Errorf("multilabel decoding over %d labels: no labelling found (%s)", L, res.Status)
	}
	for l := range sc.y {
		sc.y[l] = res.Assignment[l] == 1
	}
	return res.Primal, res.Gap <= 1e-6*max(1, math.Abs(res.Primal)), nil
}

func cardsTwo(L int) []int {
	c := make([]int, L)
	for i := range c {
		c[i] = 2
	}
	return c
}

// mlBrute enumerates {0,1}^L in Gray code order, updating the score by one
// flip per step (O(2^L L)).
func mlBrute(w *Weights, sc *MLScratch) float64 {
	L := w.Labels
	cur := make([]bool, L)
	score, best := 0.0, 0.0
	for l := range sc.y {
		sc.y[l] = false
	}
	for k := uint(1); k < 1<<uint(L); k++ {
		l := bits.TrailingZeros(k)
		delta := sc.s[l]
		for a := 0; a < L; a++ {
			if a != l && cur[a] {
				delta += w.Pair[min(a, l)*L+max(a, l)]
			}
		}
		if cur[l] {
			score -= delta
		} else {
			score += delta
		}
		cur[l] = !cur[l]
		if score > best {
			best = score
			copy(sc.y, cur)
		}
	}
	return best
}

// MLScore returns the score of labelling y (positive labels) of example i
// with unaries sc.s (as left by mlUnary).
func mlScore(w *Weights, pos []int32, s []float64) float64 {
	L := w.Labels
	v := 0.0
	for k, a := range pos {
		if int(a) >= L {
			continue
		}
		v += s[a]
		for _, b := range pos[k+1:] {
			if int(b) < L {
				v += w.Pair[int(a)*L+int(b)]
			}
		}
	}
	return v
}

// MLHinge returns example i's structured hinge loss under w (the
// loss-augmented maximiser left in sc), and whether the maximisation was
// exact.
func MLHinge(ctx context.Context, w *Weights, d *MLData, i int, sc *MLScratch) (float64, bool, error) {
	c := mlUnary(w, d, i, true, sc)
	best, ok, err := mlDecode(ctx, w, sc)
	if err != nil {
		return 0, false, err
	}
	// The truth's loss-augmented score is its plain score: its unaries
	// carry -1 per positive, which c adds back.
	truth := mlScore(w, d.Positive(i), sc.s) + c
	return max(best+c-truth, 0), ok, nil
}

// parallel runs f(worker, i) for i in [0, n) on up to threads goroutines
// (0: GOMAXPROCS), contiguous blocks per worker, and returns the first error.
func parallel(n, threads int, f func(worker, lo, hi int) error) error {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = max(1, min(threads, n))
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for k := 0; k < threads; k++ {
		lo, hi := k*n/threads, (k+1)*n/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = f(k, lo, hi)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Primal returns the structural SVM primal objective
// 1/2 ||w||^2 + C sum_i hinge_i(w) on d (Yen et al. eqs. 1-3), the
// examples spread over threads goroutines. exactly is false when some
// multilabel loss-augmented maximisation was not proved optimal (the value
// is then a lower bound).
func Primal(ctx context.Context, w *Weights, d *Data, C float64, threads int) (p float64, exactly bool, err error) {
	var n int
	if d.Seq != nil {
		n = d.Seq.Sentences()
	} else {
		n = d.ML.Examples()
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	part := make([]float64, max(1, min(threads, n)))
	inexact := make([]bool, len(part))
	err = parallel(n, threads, func(k, lo, hi int) error {
		sum := 0.0
		if d.Seq != nil && w.Labels >= ColGenLabels {
			var hc seqChains
			var sv sparseViterbi
			useSparse := sv.build(w)
			for s := lo; s < hi; s++ {
				if s%16 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if useSparse {
					sum += sv.hinge(w, d.Seq, s)
				} else {
					sum += hc.hinge(w, d.Seq, s)
				}
			}
		} else if d.Seq != nil {
			var sc SeqScratch
			for s := lo; s < hi; s++ {
				if s%16 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				sum += SeqHinge(w, d.Seq, s, &sc)
			}
		} else {
			var sc MLScratch
			for i := lo; i < hi; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				h, ok, err := MLHinge(ctx, w, d.ML, i, &sc)
				if err != nil {
					return err
				}
				sum += h
				inexact[k] = inexact[k] || !ok
			}
		}
		part[k] = sum
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	loss := 0.0
	exactly = true
	for k, v := range part {
		loss += v
		exactly = exactly && !inexact[k]
	}
	return 0.5*w.SqNorm() + C*loss, exactly, nil
}
