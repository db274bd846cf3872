package slaves_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ddrun/ddrun/slaves"
)

// Benchmarks of chain and tree MAP and chain QUAD.
//
// The tagging regime of BenchmarkChainMAP imitates a trained linear-chain
// tagger, where local scores dominate (Belanger et al. 2012, Sect. 1 and 6):
// every label of every position gets a N(0, 1) emission, the position's
// gold label gets +6, and with probability 1/3 a confusable second label
// gets +5.5 (the two are then separated by the transitions); one transition
// table, uniform in [-0.5, 0.5], is shared by all positions (a homogeneous
// chain, as in a trained model); w = 0 (plain decoding). Sentences of 20
// tokens with 45 labels (POS) and 360 labels (joint POS x NER, the paper's
// Table 1), 10 tokens with 3000 labels. Other regimes:
//
//   - ambiguous: two or three labels per position within 1 of each other
//     (+6, +5.5, and +5 with probability 1/2), transitions in [-1, 1];
//   - bio: tagging, plus BIO hard constraints (label 2t+2 = I-t only after
//     2t+1 = B-t or I-t): the symbolic arithmetic of chain_colgen.go;
//   - strong: adversarial, flat emissions (uniform in [-0.1, 0.1]) and
//     transitions uniform in [-5, 5], where the bounds of Alg. 2 prune
//     nothing and column generation falls back to Viterbi.

// chainBenchSet is a set of sentences sharing one transition table.
type chainBenchSet struct {
	chains []*slaves.Chain // one per sentence, for each algorithm in turn
	w      []float64
	y      []int
}

func chainBenchBuild(rng *rand.Rand, regime string, n, L, sentences int, alg slaves.ChainAlgorithm) *chainBenchSet {
	tab := make([]float64, L*L)
	for i := range tab {
		switch regime {
		case "strong":
			tab[i] = 10*rng.Float64() - 5
		case "ambiguous":
			tab[i] = 2*rng.Float64() - 1
		default:
			tab[i] = rng.Float64() - 0.5
		}
	}
	if regime == "bio" {
		// State 0 = O, 2t+1 = B-t, 2t+2 = I-t: I-t only after B-t or I-t.
		for x := 0; x < L; x++ {
			for xp := 2; xp < L; xp += 2 {
				if x != xp && x != xp-1 {
					tab[x*L+xp] = math.Inf(-1)
				}
			}
		}
	}
	cards := make([]int, n)
	tr := make([][]float64, n-1)
	for k := range cards {
		cards[k] = L
	}
	for k := range tr {
		tr[k] = tab
	}
	s := &chainBenchSet{w: make([]float64, n*L), y: make([]int, n)}
	for j := 0; j < sentences; j++ {
		em := make([][]float64, n)
		for k := range em {
			em[k] = make([]float64, L)
			for x := range em[k] {
				if regime == "strong" {
					em[k][x] = 0.2*rng.Float64() - 0.1
				} else {
					em[k][x] = rng.NormFloat64()
				}
			}
			switch regime {
			case "tagging", "bio":
				em[k][rng.IntN(L)] += 6
				if rng.IntN(3) == 0 {
					em[k][rng.IntN(L)] += 5.5
				}
			case "ambiguous":
				em[k][rng.IntN(L)] += 6
				em[k][rng.IntN(L)] += 5.5
				if rng.IntN(2) == 0 {
					em[k][rng.IntN(L)] += 5
				}
			}
		}
		c := slaves.NewChain(cards, em, tr)
		c.SetAlgorithm(alg)
		s.chains = append(s.chains, c)
	}
	return s
}

func BenchmarkChainMAP(b *testing.B) {
	for _, cs := range []struct {
		regime string
		L, n   int
	}{
		{"tagging", 45, 20}, {"tagging", 360, 20}, {"tagging", 3000, 10},
		{"ambiguous", 45, 20}, {"ambiguous", 360, 20},
		{"bio", 45, 20}, {"bio", 361, 20},
		{"strong", 45, 20}, {"strong", 360, 20},
	} {
		for _, alg := range []slaves.ChainAlgorithm{slaves.ChainViterbi, slaves.ChainColumnGeneration} {
			b.Run(fmt.Sprintf("%s/L=%d/n=%d/%v", cs.regime, cs.L, cs.n, alg), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(uint64(cs.L), 31))
				sentences := 16
				if cs.L >= 3000 {
					sentences = 4
				}
				s := chainBenchBuild(rng, cs.regime, cs.n, cs.L, sentences, alg)
				sum := 0.0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sum += s.chains[i%len(s.chains)].MAP(s.w, s.y)
				}
				b.StopTimer()
				if math.IsNaN(sum) {
					b.Fatal("NaN")
				}
				if alg == slaves.ChainColumnGeneration {
					var st slaves.ChainStats
					for _, c := range s.chains {
						x := c.ColGenStats()
						st.Calls += x.Calls
						st.Rounds += x.Rounds
						st.States += x.States
						st.Fallbacks += x.Fallbacks
						st.Work += x.Work
					}
					b.ReportMetric(st.Work/float64(st.Calls)/float64((cs.n-1)*cs.L*cs.L), "work/viterbi")
					b.ReportMetric(float64(st.Rounds)/float64(st.Calls), "rounds/op")
					b.ReportMetric(float64(st.Fallbacks)/float64(st.Calls), "fallbacks/op")
					if ok := st.Calls - st.Fallbacks; ok > 0 {
						b.ReportMetric(float64(st.States)/float64(ok)/float64(cs.n), "|D|/pos")
					}
				}
			})
		}
	}
}

// Warm-started QUAD of a tagging chain (n = 20, 45 labels) with either MAP
// oracle, on inputs that wander around a base point as consecutive DD-ADMM
// iterations do: the chain keeps its emissions and transitions and c is
// near the marginals (base in [-0.2, 1.2] plus a fresh jitter of 0.05).
func BenchmarkChainQUAD(b *testing.B) {
	for _, alg := range []slaves.ChainAlgorithm{slaves.ChainViterbi, slaves.ChainColumnGeneration} {
		b.Run(fmt.Sprintf("L=45/n=20/%v", alg), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(41, 42))
			s := chainBenchBuild(rng, "tagging", 20, 45, 1, alg)
			c := s.chains[0]
			dim := 20 * 45
			const nIn = 64
			cs := asWarmInputs(rng, dim, nIn, 0.05)
			u := make([]float64, dim)
			for j := 0; j < 2*nIn; j++ {
				c.QUAD(cs[j%nIn], 1, u)
			}
			as := c.ActiveSet()
			as.ResetStats()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.QUAD(cs[i%nIn], 1, u)
			}
			b.StopTimer()
			st := as.Stats()
			b.ReportMetric(float64(st.OracleCalls)/float64(st.Calls), "oracle/op")
			b.ReportMetric(float64(as.NumActive()), "|W|")
		})
	}
}

// Tree MAP on random trees (each variable's parent uniform among the
// earlier ones) and on the chain-shaped tree, 45 labels, tagging-like
// scores, against Chain's Viterbi on the same chain.
func BenchmarkTreeMAP(b *testing.B) {
	for _, shape := range []string{"random", "chain"} {
		for _, n := range []int{20, 200} {
			b.Run(fmt.Sprintf("%s/L=45/n=%d", shape, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(51, uint64(n)))
				const L = 45
				cards := make([]int, n)
				parent := make([]int, n-1)
				em := make([][]float64, n)
				tb := make([][]float64, n-1)
				for v := range cards {
					cards[v] = L
					em[v] = make([]float64, L)
					for x := range em[v] {
						em[v][x] = rng.NormFloat64()
					}
					em[v][rng.IntN(L)] += 6
				}
				tab := make([]float64, L*L)
				for i := range tab {
					tab[i] = rng.Float64() - 0.5
				}
				for k := range parent {
					parent[k] = k
					if shape == "random" {
						parent[k] = rng.IntN(k + 1)
					}
					tb[k] = tab
				}
				t := slaves.NewTree(cards, parent, em, tb)
				w := make([]float64, n*L)
				y := make([]int, n)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t.MAP(w, y)
				}
			})
		}
	}
}

// In the tagging regime of the benchmarks, column generation with the
// default budget never falls back, and agrees with Viterbi.
func TestChainColGenTaggingNoFallback(t *testing.T) {
	for _, L := range []int{45, 360} {
		rng := rand.New(rand.NewPCG(uint64(L), 31))
		s := chainBenchBuild(rng, "tagging", 20, L, 16, slaves.ChainColumnGeneration)
		for i, c := range s.chains {
			got := c.MAP(s.w, s.y)
			c.SetAlgorithm(slaves.ChainViterbi)
			want := c.MAP(s.w, s.y)
			c.SetAlgorithm(slaves.ChainColumnGeneration)
			if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Errorf("L=%d sentence %d: colgen %v, viterbi %v", L, i, got, want)
			}
			if st := c.ColGenStats(); st.Fallbacks != 0 {
				t.Errorf("L=%d sentence %d: fell back to Viterbi: %+v", L, i, st)
			}
		}
	}
}
