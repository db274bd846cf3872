package learn

import (
	"context"
	"math"
)

// BlockRegularized returns tr extended to block regularization (Belanger,
// Passos, Riedel, McCallum 2012, Sect. 4 and 6.2; Options.RegEmit,
// RegTrans): the primal
//
//	1/2 (r_e ||W_e||^2 + r_t ||W_t||^2) + C sum_i hinge_i(W_e, W_t)
//
// becomes a plain one by the change of variables W_e = k U_e, k =
// sqrt(r_t / r_e), W_t = U_t: it is r_t times the plain primal of (U_e,
// U_t) with loss weight C / r_t on the data whose feature values are
// multiplied by k (the transition or pair features, implicit indicators,
// keep their scale). tr trains on that data; the weights come back as
// W_e = k U_e and the objective values (primal, dual, gap) multiplied by
// r_t. A trainer reached this way is called with RegEmit = RegTrans = 1.
// With both coefficients 1 it is tr itself.
func BlockRegularized(tr Trainer) Trainer {
	return func(ctx context.Context, d *Data, o Options) (*Weights, Result, error) {
		if err := o.Validate(); err != nil {
			return nil, Result{}, err
		}
		re, rt := o.RegEmit, o.RegTrans
		if re == 1 && rt == 1 {
			return tr(ctx, d, o)
		}
		k := math.Sqrt(rt / re)
		scale := func(r Result) Result {
			r.Primal *= rt
			r.Dual *= rt
			r.Gap *= rt
			return r
		}
		inner := o
		inner.C = o.C / rt
		inner.RegEmit, inner.RegTrans = 1, 1
		if p := o.Progress; p != nil {
			inner.Progress = func(r Result) { p(scale(r)) }
		}
		w, res, err := tr(ctx, scaleFeatures(d, k), inner)
		res = scale(res)
		if w != nil {
			for i := range w.Emit {
				w.Emit[i] *= k
			}
		}
		return w, res, err
	}
}

// scaleFeatures returns d with every feature value multiplied by k (the
// rows' values copied, everything else shared).
func scaleFeatures(d *Data, k float64) *Data {
	scaled := func(x Rows) Rows {
		v := make([]float64, len(x.Val))
		for i, a := range x.Val {
			v[i] = k * a
		}
		x.Val = v
		return x
	}
	if d.Seq != nil {
		s := *d.Seq
		s.X = scaled(s.X)
		return &Data{Seq: &s}
	}
	m := *d.ML
	m.X = scaled(m.X)
	return &Data{ML: &m}
}

// BlockPrimal returns the block-regularized primal
// 1/2 (RegEmit ||W_e||^2 + RegTrans ||W_t||^2) + C sum_i hinge_i of w on d
// (Primal when both coefficients are 1), computed directly on w.
func BlockPrimal(ctx context.Context, w *Weights, d *Data, o Options) (float64, bool, error) {
	if err := o.Validate(); err != nil {
		return 0, false, err
	}
	p, exactly, err := Primal(ctx, w, d, o.C, o.Threads)
	if err != nil {
		return 0, false, err
	}
	e := 0.0
	for _, v := range w.Emit {
		e += v * v
	}
	t := w.SqNorm() - e
	return p + 0.5*((o.RegEmit-1)*e+(o.RegTrans-1)*t), exactly, nil
}
