//go:build amd64 && !purego

#include "textflag.h"

// REDUCE8 sums the 8 lanes of Y0 into the low lane of X0: the upper 128
// bits onto the lower, then two horizontal adds, i.e.
// ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)) (reduce8 in gemm_x8.go).
#define REDUCE8 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// func dotF16x8AVX2(w []uint16, x []float32) float32
// The f16x8 dot product of w and x[:len(w)]: one chain of fused
// multiply-adds per lane over the 8-element groups, REDUCE8, then the tail
// element by element.
TEXT ·dotF16x8AVX2(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), SI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
x8dot32:
	CMPQ CX, $32
	JLT  x8dot8
	PREFETCHT0 4096(SI)
	VCVTPH2PS 0(SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y0
	VFMADD231PS 64(DI), Y6, Y0
	VFMADD231PS 96(DI), Y7, Y0
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  x8dot32
x8dot8:
	CMPQ CX, $8
	JLT  x8reduce
	VCVTPH2PS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  x8dot8
x8reduce:
	REDUCE8
x8tail:
	TESTQ CX, CX
	JEQ   x8done
	MOVWLZX (SI), AX
	VMOVD   AX, X4
	VCVTPH2PS X4, X4
	VFMADD231SS (DI), X4, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  x8tail
x8done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotF16x8Rows4AVX2(w []uint16, cols int, x []float32, out []float32)
// out[r] = dotF16x8AVX2(w[r*cols:(r+1)*cols], x) for r < len(out), which
// must be a multiple of 4, for cols a multiple of 8: four rows at a time,
// each its own chain (four chains hide the FMA latency), one load of x for
// the four. Registers: Y4-Y7 the rows' accumulators, Y8 x, Y9-Y12 the rows'
// widened elements; SI R9 R10 R11 the rows, DI x, AX the weight offset
// (bytes), CX the elements left, R13 four rows' bytes, R14 quads left.
TEXT ·dotF16x8Rows4AVX2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ cols+24(FP), R12
	MOVQ x_base+32(FP), DI
	MOVQ out_base+56(FP), R8
	MOVQ out_len+64(FP), R14
	SHRQ $2, R14
	LEAQ (R12)(R12*1), R13
	LEAQ (SI)(R13*1), R9
	LEAQ (R9)(R13*1), R10
	LEAQ (R10)(R13*1), R11
	SHLQ $2, R13
x8rowsquad:
	TESTQ R14, R14
	JEQ   x8rowsdone
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX
	MOVQ R12, CX
x8rows32:
	CMPQ CX, $32
	JLT  x8rows8
	PREFETCHT0 2048(SI)(AX*1)
	PREFETCHT0 2048(R9)(AX*1)
	PREFETCHT0 2048(R10)(AX*1)
	PREFETCHT0 2048(R11)(AX*1)
	VMOVUPS 0(DI)(AX*2), Y8
	VCVTPH2PS 0(SI)(AX*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VCVTPH2PS 0(R9)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VCVTPH2PS 0(R10)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VCVTPH2PS 0(R11)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y7
	VMOVUPS 32(DI)(AX*2), Y8
	VCVTPH2PS 16(SI)(AX*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VCVTPH2PS 16(R9)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VCVTPH2PS 16(R10)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VCVTPH2PS 16(R11)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y7
	VMOVUPS 64(DI)(AX*2), Y8
	VCVTPH2PS 32(SI)(AX*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VCVTPH2PS 32(R9)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VCVTPH2PS 32(R10)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VCVTPH2PS 32(R11)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y7
	VMOVUPS 96(DI)(AX*2), Y8
	VCVTPH2PS 48(SI)(AX*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VCVTPH2PS 48(R9)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VCVTPH2PS 48(R10)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VCVTPH2PS 48(R11)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y7
	ADDQ $64, AX
	SUBQ $32, CX
	JMP  x8rows32
x8rows8:
	CMPQ CX, $8
	JLT  x8rowsreduce
	VMOVUPS (DI)(AX*2), Y8
	VCVTPH2PS (SI)(AX*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VCVTPH2PS (R9)(AX*1), Y10
	VFMADD231PS Y8, Y10, Y5
	VCVTPH2PS (R10)(AX*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VCVTPH2PS (R11)(AX*1), Y12
	VFMADD231PS Y8, Y12, Y7
	ADDQ $16, AX
	SUBQ $8, CX
	JMP  x8rows8
x8rowsreduce:
	VMOVAPS Y4, Y0
	REDUCE8
	MOVSS X0, 0(R8)
	VMOVAPS Y5, Y0
	REDUCE8
	MOVSS X0, 4(R8)
	VMOVAPS Y6, Y0
	REDUCE8
	MOVSS X0, 8(R8)
	VMOVAPS Y7, Y0
	REDUCE8
	MOVSS X0, 12(R8)
	ADDQ $16, R8
	ADDQ R13, SI
	ADDQ R13, R9
	ADDQ R13, R10
	ADDQ R13, R11
	DECQ R14
	JMP  x8rowsquad
x8rowsdone:
	VZEROUPPER
	RET


// func gemmF16x8TileAVX2(w []uint16, ldw int, groups int, x []float32, ldx int, blocks int, acc *[x8Acc]float32, pf unsafe.Pointer, pfstride int, pfrows int, npf int)
// For each of groups groups of 3 rows (group g's row r at
// w[(3*g+r)*ldw:]; ldw 0 repeats one row) and the 4 inputs t of x (input t
// at x[t*ldx:]), adds to acc[96*g + (r*4+t)*8 + j] lane j of the f16x8
// sums over the first 32*blocks elements: one fused multiply-add per
// 8-element group, in group order, as dotF16x8AVX2's lane j does, so calls
// over consecutive chunks of a row continue its sums. Group g < pfrows also
// prefetches npf (<= blocks) cache lines from pf + g*pfstride bytes on, one
// per block, to the L2 cache: the rows of the tile's next chunk, so that
// they arrive while this one is multiplied (the hardware prefetchers do not
// run far enough ahead of chunks this short). Registers: Y0-Y11 the
// accumulators of output r*4+t, Y12-Y14 the rows' 8 elements, Y15 an
// input's; SI R9 R8 rows, DI R10 R11 R12 inputs; AX the input offset, R13
// the weight offset; CX the blocks left, R15 the prefetches left at R14; DX
// the group's accumulators. The row stride in bytes, the groups and
// prefetching rows left and the next prefetch row are locals.
TEXT ·gemmF16x8TileAVX2(SB), NOSPLIT, $32-120
	MOVQ w_base+0(FP), SI
	MOVQ ldw+24(FP), BX
	SHLQ $1, BX
	MOVQ BX, ldwb-8(SP)
	MOVQ groups+32(FP), BX
	MOVQ BX, gleft-16(SP)
	MOVQ pf+88(FP), BX
	MOVQ BX, pfrow-24(SP)
	MOVQ pfrows+104(FP), BX
	MOVQ BX, pfleft-32(SP)
	MOVQ x_base+40(FP), DI
	MOVQ ldx+64(FP), R13
	SHLQ $2, R13
	LEAQ (DI)(R13*1), R10
	LEAQ (R10)(R13*1), R11
	LEAQ (R11)(R13*1), R12
	MOVQ acc+80(FP), DX
x8tilegroup:
	MOVQ gleft-16(SP), BX
	TESTQ BX, BX
	JEQ   x8tiledone
	MOVQ ldwb-8(SP), BX
	LEAQ (SI)(BX*1), R9
	LEAQ (R9)(BX*1), R8
	XORQ R15, R15
	MOVQ pfrow-24(SP), R14
	MOVQ pfleft-32(SP), BX
	TESTQ BX, BX
	JEQ   x8tilenopf
	DECQ BX
	MOVQ BX, pfleft-32(SP)
	MOVQ npf+112(FP), R15
	MOVQ pfstride+96(FP), BX
	ADDQ R14, BX
	MOVQ BX, pfrow-24(SP)
x8tilenopf:
	MOVQ blocks+72(FP), CX
	VMOVUPS 0(DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
	VMOVUPS 256(DX), Y8
	VMOVUPS 288(DX), Y9
	VMOVUPS 320(DX), Y10
	VMOVUPS 352(DX), Y11
	XORQ AX, AX
	XORQ R13, R13
	TESTQ CX, CX
	JEQ   x8tilestore
x8tileloop:
	TESTQ R15, R15
	JEQ   x8tilebody
	PREFETCHT1 (R14)
	ADDQ $64, R14
	DECQ R15
x8tilebody:
	VCVTPH2PS 0(SI)(R13*1), Y12
	VCVTPH2PS 0(R9)(R13*1), Y13
	VCVTPH2PS 0(R8)(R13*1), Y14
	VMOVUPS 0(DI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS 0(R10)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS 0(R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS 0(R12)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	VCVTPH2PS 16(SI)(R13*1), Y12
	VCVTPH2PS 16(R9)(R13*1), Y13
	VCVTPH2PS 16(R8)(R13*1), Y14
	VMOVUPS 32(DI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS 32(R10)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS 32(R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS 32(R12)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	VCVTPH2PS 32(SI)(R13*1), Y12
	VCVTPH2PS 32(R9)(R13*1), Y13
	VCVTPH2PS 32(R8)(R13*1), Y14
	VMOVUPS 64(DI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS 64(R10)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS 64(R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS 64(R12)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	VCVTPH2PS 48(SI)(R13*1), Y12
	VCVTPH2PS 48(R9)(R13*1), Y13
	VCVTPH2PS 48(R8)(R13*1), Y14
	VMOVUPS 96(DI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS 96(R10)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS 96(R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS 96(R12)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JNZ  x8tileloop
x8tilestore:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VMOVUPS Y8, 256(DX)
	VMOVUPS Y9, 288(DX)
	VMOVUPS Y10, 320(DX)
	VMOVUPS Y11, 352(DX)
	ADDQ $384, DX
	MOVQ ldwb-8(SP), BX
	LEAQ (R8)(BX*1), SI
	DECQ gleft-16(SP)
	JMP  x8tilegroup
x8tiledone:
	VZEROUPPER
	RET

// func x8ReduceAVX2(acc *float32, groups int, out *float32, ldo int)
// For each of groups groups g of 3 rows r and the 4 inputs t, stores to
// out[t*ldo + 3*g + r] the REDUCE8 sum of the 8 lanes at
// acc[96*g + (r*4+t)*8:] (the accumulators gemmF16x8TileAVX2 leaves), bit
// for bit reduce8's ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)): the upper 128
// bits of inputs 0 and 1 (2 and 3) onto their lower ones in one register
// (VPERM2F128 pairs the halves), then two horizontal adds, leaving input
// 0's sum in lane 0, input 2's in lane 1, input 1's in lane 4 and input
// 3's in lane 5. Registers: SI the accumulators, CX the groups left, DI R8
// R9 R10 the outputs of inputs 0..3.
TEXT ·x8ReduceAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ ldo+24(FP), BX
	SHLQ $2, BX
	LEAQ (DI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	TESTQ CX, CX
	JEQ   x8reducedone
x8reducegroup:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VPERM2F128 $0x20, Y1, Y0, Y4
	VPERM2F128 $0x31, Y1, Y0, Y5
	VADDPS Y5, Y4, Y4
	VPERM2F128 $0x20, Y3, Y2, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VHADDPS Y4, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMOVSS X4, 0(DI)
	VEXTRACTPS $1, X4, 0(R9)
	VMOVSS X5, 0(R8)
	VEXTRACTPS $1, X5, 0(R10)
	VMOVUPS 128(SI), Y0
	VMOVUPS 160(SI), Y1
	VMOVUPS 192(SI), Y2
	VMOVUPS 224(SI), Y3
	VPERM2F128 $0x20, Y1, Y0, Y4
	VPERM2F128 $0x31, Y1, Y0, Y5
	VADDPS Y5, Y4, Y4
	VPERM2F128 $0x20, Y3, Y2, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VHADDPS Y4, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMOVSS X4, 4(DI)
	VEXTRACTPS $1, X4, 4(R9)
	VMOVSS X5, 4(R8)
	VEXTRACTPS $1, X5, 4(R10)
	VMOVUPS 256(SI), Y0
	VMOVUPS 288(SI), Y1
	VMOVUPS 320(SI), Y2
	VMOVUPS 352(SI), Y3
	VPERM2F128 $0x20, Y1, Y0, Y4
	VPERM2F128 $0x31, Y1, Y0, Y5
	VADDPS Y5, Y4, Y4
	VPERM2F128 $0x20, Y3, Y2, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VHADDPS Y4, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMOVSS X4, 8(DI)
	VEXTRACTPS $1, X4, 8(R9)
	VMOVSS X5, 8(R8)
	VEXTRACTPS $1, X5, 8(R10)
	ADDQ $384, SI
	ADDQ $12, DI
	ADDQ $12, R8
	ADDQ $12, R9
	ADDQ $12, R10
	DECQ CX
	JNZ  x8reducegroup
x8reducedone:
	VZEROUPPER
	RET
