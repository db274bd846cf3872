#include "textflag.h"

// func prefetch(p *float64, n int)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), BX
	LEAQ -8(AX)(BX*8), CX // the last entry
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS loop
	PREFETCHT0 (CX)
	RET
