//go:build !amd64

package trws

// The send steps of kernels_amd64.s, in Go (sendRef).

func sendCols4(m *[4]float64, t *[16]float64, h *[4]float64, gm float64) float64 {
	return sendRef(m[:], t[:], h[:], gm, true)
}

func sendRows4(m *[4]float64, t *[16]float64, h *[4]float64, gm float64) float64 {
	return sendRef(m[:], t[:], h[:], gm, false)
}

func sendCols8(m *[8]float64, t *[64]float64, h *[8]float64, gm float64) float64 {
	return sendRef(m[:], t[:], h[:], gm, true)
}

func sendRows8(m *[8]float64, t *[64]float64, h *[8]float64, gm float64) float64 {
	return sendRef(m[:], t[:], h[:], gm, false)
}
