//go:build !amd64

package trws

// The send steps of kernels_amd64.s, in Go (sendRef).

func sendCols4(m *[20]float64, h *[4]float64, gm float64) float64 {
	return sendRef(m[:], h[:], gm, true)
}

func sendRows4(m *[20]float64, h *[4]float64, gm float64) float64 {
	return sendRef(m[:], h[:], gm, false)
}

func sendCols8(m *[72]float64, h *[8]float64, gm float64) float64 {
	return sendRef(m[:], h[:], gm, true)
}

func sendRows8(m *[72]float64, h *[8]float64, gm float64) float64 {
	return sendRef(m[:], h[:], gm, false)
}
