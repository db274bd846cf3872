package solver

// Argmax returns the first index of the largest entry of v (0 when v is
// empty or no entry beats the first, NaN entries included): the decoding
// of an assignment from beliefs or reparametrised unaries.
func Argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
