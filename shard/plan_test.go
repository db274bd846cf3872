package shard

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ddrun/ddrun/model"
	"github.com/ddrun/ddrun/model/indexed"
)

// twoPassOwners is the plan's second pass as it was, in two walks (the
// owner of every variable, then each worker's slaves over each boundary
// variable): the oracle of the one-walk planner.owners.
func twoPassOwners(t *testing.T, p *planner) {
	t.Helper()
	owner := make([]int16, p.sc.NumVars()) // -1 none, -2 several
	for i := range owner {
		owner[i] = -1
	}
	w := 0
	err := p.sc.Walk(indexed.Visitor{Factor: func(a int, _ indexed.Record, f *model.Factor) error {
		for a >= p.cut[w+1] {
			w++
		}
		for _, v := range f.Vars {
			switch o := owner[v]; {
			case o == -1:
				owner[v] = int16(w)
			case o >= 0 && int(o) != w:
				owner[v] = -2
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for v, o := range owner {
		switch o {
		case -2:
			p.bvars = append(p.bvars, v)
		case -1:
			p.isolated = append(p.isolated, v)
		}
	}
	p.of, p.deg, p.entries = make([][]int, p.workers), make([][]int, p.workers), make([]int, p.workers)
	count := make([]int32, len(p.bvars))
	var touched []int
	w = 0
	flush := func() {
		slices.Sort(touched)
		for _, j := range touched {
			p.of[w] = append(p.of[w], j)
			p.deg[w] = append(p.deg[w], int(count[j]))
			count[j] = 0
		}
		touched = touched[:0]
	}
	err = p.sc.Walk(indexed.Visitor{Factor: func(a int, _ indexed.Record, f *model.Factor) error {
		for a >= p.cut[w+1] {
			flush()
			w++
		}
		for _, v := range f.Vars {
			p.entries[w] += p.cards.Card(v)
			j, ok := slices.BinarySearch(p.bvars, v)
			if !ok {
				continue
			}
			if count[j] == 0 {
				touched = append(touched, j)
			}
			count[j]++
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	flush()
}

// The one-walk second pass finds what the two walks found: the same
// boundary, isolated variables, slaves per worker and replica entries, on
// random pairwise and triple factors over hubs of more than 255 factors
// (owners' saturating counts) and variables in no factor.
func TestOwnersMatchTwoPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	maxDeg := 0
	for trial := range 12 {
		n := 20 + r.IntN(400)
		cards := make([]int, n)
		for i := range cards {
			cards[i] = 2 + r.IntN(3)
		}
		m := model.New(cards)
		nf := 50 + r.IntN(3000)
		hub := r.IntN(n)
		for range nf {
			vs := []int{r.IntN(n), r.IntN(n)}
			if r.IntN(2) == 0 {
				vs[0] = hub
			}
			if r.IntN(5) == 0 {
				vs = append(vs, r.IntN(n))
			}
			slices.Sort(vs)
			if vs = slices.Compact(vs); len(vs) < 2 {
				continue
			}
			size, _ := m.TableSize(vs)
			tab := make([]float64, size)
			for k := range tab {
				tab[k] = r.Float64()
			}
			m.Factors = append(m.Factors, model.Factor{Kind: model.Dense, Vars: vs, Table: tab})
		}
		path := writeDDX(t, m)
		for _, workers := range []int{1, 2, 3, 7} {
			f, size, err := openSized(path, "shard")
			if err != nil {
				t.Fatal(err)
			}
			sc, err := indexed.OpenScan(f, size, path, indexed.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := &planner{sc: sc, path: path, workers: workers}
			if err := got.ranges(); err != nil {
				t.Fatal(err)
			}
			want := *got
			if err := got.owners(); err != nil {
				t.Fatal(err)
			}
			twoPassOwners(t, &want)
			f.Close()
			for _, c := range []struct {
				what      string
				got, want any
			}{{"boundary", got.bvars, want.bvars}, {"isolated", got.isolated, want.isolated},
				{"of", got.of, want.of}, {"deg", got.deg, want.deg}, {"entries", got.entries, want.entries}} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Fatalf("trial %d, %d workers: %s %v, the two passes found %v", trial, workers, c.what, c.got, c.want)
				}
			}
			for _, d := range got.deg {
				maxDeg = max(maxDeg, slices.Max(append(d, 0)))
			}
			if workers > 1 && len(got.bvars) == 0 {
				t.Fatalf("trial %d, %d workers: no boundary: the test tests nothing", trial, workers)
			}
		}
	}
	if maxDeg <= 255 {
		t.Fatalf("no worker has more than 255 slaves over a boundary variable (%d at most): the saturating counts are not tested", maxDeg)
	}
}
