package learn

import (
	"cmp"
	"math"
	"slices"
)

// transView is the sublinear oracle of an indicator factor (Yen et al.
// Sect. 3.2): ordered views of the transition table T (all entries, each
// row, each column, sorted by value at the last snapshot), with the
// entries changed since then (dirty) checked apart. The oracle
//
//	argmin_{a,b} mL[a] + mR[b] - T[a,b]
//
// compares four cases: both endpoints active (mL or mR may be nonzero:
// enumerated, O(|AL||AR|)); a active and b not (each active row's best
// clean entry outside AR, scanned in order); b active and a not (the same
// by columns); neither (the globally best clean entry outside AL x AR).
// A clean entry keeps its snapshot value, so the first admissible clean
// entry of an ordered view is the best of its case; dirty entries are
// evaluated directly. The result equals fmoDense's value exactly.
type transView struct {
	T         []float64
	L         int
	all       []int32 // entry indices a*L+b, descending T at the snapshot
	rowOrd    []int32 // row a's entries a*L+b at rowOrd[a*L:(a+1)*L], descending
	colOrd    []int32 // column b's entries a*L+b at colOrd[b*L:(b+1)*L], descending
	scratch   []int32 // merge's clean entries
	dscratch  []int32 // merge's dirty entries
	dirty     []bool
	dlist     []int32
	inL, inR  []bool
	threshold int
	rebuilds  int
}

func newTransView(T []float64, L int) *transView {
	v := &transView{T: T, L: L, all: make([]int32, L*L), rowOrd: make([]int32, L*L), colOrd: make([]int32, L*L),
		dirty: make([]bool, L*L), inL: make([]bool, L), inR: make([]bool, L), threshold: max(64, 4*L)}
	v.rebuild()
	return v
}

// rebuild takes a new snapshot. The first sorts every view, O(L^2 log
// L); later ones merge: the clean entries of a view keep their values, so
// their old order stands, and only the dirty ones are sorted (d log d)
// and merged in, each view with no dirty entry left as it is: O(L^2 + d
// log d) for the global view and O(L) per row or column touched. At 105
// tags the full sorts, taken every 4 L changes, were 35% of a GDMM pass.
func (v *transView) rebuild() {
	L, T := v.L, v.T
	// before orders the views: T descending, ties by index.
	before := func(i, j int32) int {
		if c := cmp.Compare(T[j], T[i]); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	}
	if v.rebuilds == 0 {
		for i := range v.all {
			v.all[i] = int32(i)
		}
		slices.SortFunc(v.all, before)
		for a := 0; a < L; a++ {
			row, col := v.rowOrd[a*L:a*L+L], v.colOrd[a*L:a*L+L]
			for x := range row {
				row[x], col[x] = int32(a*L+x), int32(x*L+a)
			}
			slices.SortFunc(row, before)
			slices.SortFunc(col, before)
		}
	} else if len(v.dlist) > 0 {
		v.merge(v.all, before)
		clear(v.inL)
		clear(v.inR)
		for _, ab := range v.dlist {
			v.inL[int(ab)/L], v.inR[int(ab)%L] = true, true
		}
		for a := 0; a < L; a++ {
			if v.inL[a] {
				v.merge(v.rowOrd[a*L:a*L+L], before)
			}
			if v.inR[a] {
				v.merge(v.colOrd[a*L:a*L+L], before)
			}
		}
		clear(v.inL)
		clear(v.inR)
	}
	for _, ab := range v.dlist {
		v.dirty[ab] = false
	}
	v.dlist = v.dlist[:0]
	v.rebuilds++
}

// merge re-sorts view (entry indices, in order at the last snapshot) in
// place: its clean entries in their order, its dirty ones sorted and
// merged in.
func (v *transView) merge(view []int32, before func(i, j int32) int) {
	clean, dirt := v.scratch[:0], v.dscratch[:0]
	for _, ab := range view {
		if v.dirty[ab] {
			dirt = append(dirt, ab)
		} else {
			clean = append(clean, ab)
		}
	}
	slices.SortFunc(dirt, before)
	i, j := 0, 0
	for k := range view {
		if j == len(dirt) || i < len(clean) && before(clean[i], dirt[j]) < 0 {
			view[k] = clean[i]
			i++
		} else {
			view[k] = dirt[j]
			j++
		}
	}
	v.scratch, v.dscratch = clean, dirt
}

// touch records that T[ab] changed.
func (v *transView) touch(ab int32) {
	if !v.dirty[ab] {
		v.dirty[ab] = true
		v.dlist = append(v.dlist, ab)
		if len(v.dlist) > v.threshold {
			v.rebuild()
		}
	}
}

// argmin returns the entry minimising mL[a] + mR[b] - T[a,b] and its value;
// mL is zero outside aL, mR outside aR (dense arrays of L).
func (v *transView) argmin(mL, mR []float64, aL, aR []int32) (int32, float64) {
	L, T := v.L, v.T
	for _, a := range aL {
		v.inL[a] = true
	}
	for _, b := range aR {
		v.inR[b] = true
	}
	best, arg := math.Inf(1), int32(-1)
	try := func(ab int32) {
		if val := mL[int(ab)/L] + mR[int(ab)%L] - T[ab]; val < best || val == best && ab < arg {
			best, arg = val, ab
		}
	}
	// Dirty entries, in every case.
	for _, ab := range v.dlist {
		try(ab)
	}
	// (iv) both active.
	for _, a := range aL {
		for _, b := range aR {
			try(a*int32(L) + b)
		}
	}
	// (ii) a active, b inactive: the best clean entry of row a outside aR.
	for _, a := range aL {
		for _, ab := range v.rowOrd[int(a)*L : int(a)*L+L] {
			if !v.inR[int(ab)%L] && !v.dirty[ab] {
				try(ab)
				break
			}
		}
	}
	// (iii) b active, a inactive.
	for _, b := range aR {
		for _, ab := range v.colOrd[int(b)*L : int(b)*L+L] {
			if !v.inL[int(ab)/L] && !v.dirty[ab] {
				try(ab)
				break
			}
		}
	}
	// (i) neither: the best clean entry overall outside aL x aR.
	for _, ab := range v.all {
		if !v.inL[int(ab)/L] && !v.inR[int(ab)%L] && !v.dirty[ab] {
			try(ab)
			break
		}
	}
	for _, a := range aL {
		v.inL[a] = false
	}
	for _, b := range aR {
		v.inR[b] = false
	}
	return arg, best
}
