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

// func prefetchOutK(msg *float64, msgLen int, tab **float64, n, tabLen int)
TEXT ·prefetchOutK(SB), NOSPLIT|NOFRAME, $0-40
	MOVQ msg+0(FP), AX
	MOVQ msgLen+8(FP), BX
	LEAQ -8(AX)(BX*8), CX
mloop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS mloop
	PREFETCHT0 (CX)
	MOVQ tab+16(FP), SI
	MOVQ n+24(FP), DX
	MOVQ tabLen+32(FP), BX
	SHLQ $3, BX
	SUBQ $8, BX // offset of a table's last entry
tnext:
	TESTQ DX, DX
	JEQ done
	MOVQ (SI), AX
	LEAQ (AX)(BX*1), CX
tloop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS tloop
	PREFETCHT0 (CX)
	ADDQ $8, SI
	DECQ DX
	JMP tnext
done:
	RET

// func prefetchInK(in *int32, n int, moff *int, tab **float64, data *float64, msgLen, tabLen int)
TEXT ·prefetchInK(SB), NOSPLIT|NOFRAME, $0-56
	MOVQ in+0(FP), SI
	MOVQ n+8(FP), DX
	MOVQ moff+16(FP), R8
	MOVQ tab+24(FP), R9
	MOVQ data+32(FP), R10
	MOVQ msgLen+40(FP), R11
	SHLQ $3, R11
	SUBQ $8, R11 // offset of a message's last entry
	MOVQ tabLen+48(FP), R12
	SHLQ $3, R12
	SUBQ $8, R12 // offset of a table's last entry
next:
	TESTQ DX, DX
	JEQ done
	MOVLQSX (SI), DI // e
	MOVQ (R8)(DI*8), AX
	LEAQ (R10)(AX*8), AX // &data[moff[e]]
	LEAQ (AX)(R11*1), CX
mloop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS mloop
	PREFETCHT0 (CX)
	MOVQ (R9)(DI*8), AX // tab[e]
	LEAQ (AX)(R12*1), CX
tloop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS tloop
	PREFETCHT0 (CX)
	ADDQ $4, SI
	DECQ DX
	JMP next
done:
	RET
