//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA (+ F16C) dot-product kernels; see kernels_amd64.go. Each keeps
// four 8-lane accumulators for 32 elements per iteration, then 8 at a time,
// reduces to one float32 and finishes the tail (fewer than 8 elements) one
// element at a time.

// REDUCE sums Y0..Y3 into the low lane of X0.
#define REDUCE \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// The 3x4 GEMM kernels (gemmF32x3x4AVX2, gemmF16x3x4AVX2) run dotF32AVX2's (or dotF16AVX2's) four 8-lane
// accumulators one after the other ("phases" k = 0..3: the 8 elements at
// 8k within every 32-element block), so that 12 registers hold one
// accumulator of each of 3 rows x 4 inputs; Y12-Y14 hold the rows' 8
// elements and Y15 an input's. Registers: SI, R9, R8 rows; DI, R10, R11,
// R12 inputs; AX the input offset, R13 the weight offset; BX the blocks;
// DX the accumulators, [phase][row*4+input][8] float32.

// G34LOADACC loads the 12 accumulators of the phase at byte offset OFF of DX.
#define G34LOADACC(OFF) \
	VMOVUPS (OFF+0)(DX), Y0 \
	VMOVUPS (OFF+32)(DX), Y1 \
	VMOVUPS (OFF+64)(DX), Y2 \
	VMOVUPS (OFF+96)(DX), Y3 \
	VMOVUPS (OFF+128)(DX), Y4 \
	VMOVUPS (OFF+160)(DX), Y5 \
	VMOVUPS (OFF+192)(DX), Y6 \
	VMOVUPS (OFF+224)(DX), Y7 \
	VMOVUPS (OFF+256)(DX), Y8 \
	VMOVUPS (OFF+288)(DX), Y9 \
	VMOVUPS (OFF+320)(DX), Y10 \
	VMOVUPS (OFF+352)(DX), Y11

// G34STOREACC stores them back.
#define G34STOREACC(OFF) \
	VMOVUPS Y0, (OFF+0)(DX) \
	VMOVUPS Y1, (OFF+32)(DX) \
	VMOVUPS Y2, (OFF+64)(DX) \
	VMOVUPS Y3, (OFF+96)(DX) \
	VMOVUPS Y4, (OFF+128)(DX) \
	VMOVUPS Y5, (OFF+160)(DX) \
	VMOVUPS Y6, (OFF+192)(DX) \
	VMOVUPS Y7, (OFF+224)(DX) \
	VMOVUPS Y8, (OFF+256)(DX) \
	VMOVUPS Y9, (OFF+288)(DX) \
	VMOVUPS Y10, (OFF+320)(DX) \
	VMOVUPS Y11, (OFF+352)(DX)

// G34FMA multiplies the rows in Y12-Y14 with the 8 elements at byte offset
// OFF of each input and adds to the accumulators.
#define G34FMA(OFF) \
	VMOVUPS OFF(DI)(AX*1), Y15 \
	VFMADD231PS Y15, Y12, Y0 \
	VFMADD231PS Y15, Y13, Y4 \
	VFMADD231PS Y15, Y14, Y8 \
	VMOVUPS OFF(R10)(AX*1), Y15 \
	VFMADD231PS Y15, Y12, Y1 \
	VFMADD231PS Y15, Y13, Y5 \
	VFMADD231PS Y15, Y14, Y9 \
	VMOVUPS OFF(R11)(AX*1), Y15 \
	VFMADD231PS Y15, Y12, Y2 \
	VFMADD231PS Y15, Y13, Y6 \
	VFMADD231PS Y15, Y14, Y10 \
	VMOVUPS OFF(R12)(AX*1), Y15 \
	VFMADD231PS Y15, Y12, Y3 \
	VFMADD231PS Y15, Y13, Y7 \
	VFMADD231PS Y15, Y14, Y11

// G34ROWSF32 loads the rows' 8 float32 elements at byte offset OFF.
#define G34ROWSF32(OFF) \
	VMOVUPS OFF(SI)(R13*1), Y12 \
	VMOVUPS OFF(R9)(R13*1), Y13 \
	VMOVUPS OFF(R8)(R13*1), Y14

// G34ROWSF16 loads the rows' 8 binary16 elements at byte offset OFF, widened.
#define G34ROWSF16(OFF) \
	VCVTPH2PS OFF(SI)(R13*1), Y12 \
	VCVTPH2PS OFF(R9)(R13*1), Y13 \
	VCVTPH2PS OFF(R8)(R13*1), Y14

// G34SETUP reads the arguments; ESIZE is the weights' element size in bytes.
#define G34SETUP(ESIZE) \
	MOVQ a_base+0(FP), SI \
	MOVQ lda+24(FP), R8 \
	IMULQ $ESIZE, R8 \
	LEAQ (SI)(R8*1), R9 \
	LEAQ (R9)(R8*1), R8 \
	MOVQ x_base+32(FP), DI \
	MOVQ ldx+56(FP), R13 \
	SHLQ $2, R13 \
	LEAQ (DI)(R13*1), R10 \
	LEAQ (R10)(R13*1), R11 \
	LEAQ (R11)(R13*1), R12 \
	MOVQ blocks+64(FP), BX \
	MOVQ acc+72(FP), DX

// func dotF32AVX2(a, x []float32) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32loop32:
	CMPQ CX, $32
	JLT  f32loop8
	PREFETCHT0 512(SI)
	PREFETCHT0 576(SI)
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f32loop32

f32loop8:
	CMPQ CX, $8
	JLT  f32reduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f32loop8

f32reduce:
	REDUCE

f32tail:
	TESTQ CX, CX
	JEQ   f32done
	VMOVSS (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f32tail

f32done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotF16AVX2(w []uint16, x []float32) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), SI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16loop32:
	CMPQ CX, $32
	JLT  f16loop8
	PREFETCHT0 4096(SI)
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f16loop32

f16loop8:
	CMPQ CX, $8
	JLT  f16reduce
	VCVTPH2PS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16loop8

f16reduce:
	REDUCE

f16tail:
	TESTQ CX, CX
	JEQ   f16done
	MOVWLZX (SI), AX
	VMOVD   AX, X4
	VCVTPH2PS X4, X4
	VFMADD231SS (DI), X4, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16tail

f16done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotBF16AVX2(w []uint16, x []float32) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), SI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf16loop32:
	CMPQ CX, $32
	JLT  bf16loop8
	PREFETCHT0 4096(SI)
	VPMOVZXWD (SI), Y4
	VPMOVZXWD 16(SI), Y5
	VPMOVZXWD 32(SI), Y6
	VPMOVZXWD 48(SI), Y7
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  bf16loop32

bf16loop8:
	CMPQ CX, $8
	JLT  bf16reduce
	VPMOVZXWD (SI), Y4
	VPSLLD $16, Y4, Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bf16loop8

bf16reduce:
	REDUCE

bf16tail:
	TESTQ CX, CX
	JEQ   bf16done
	MOVWLZX (SI), AX
	SHLL    $16, AX
	VMOVD   AX, X4
	VFMADD231SS (DI), X4, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  bf16tail

bf16done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotQ8_0AVX2(w []byte, x []float32, blocks int) float32
// w holds blocks Q8_0 blocks of 34 bytes (f16 scale d, 32 int8 q);
// x holds 32*blocks floats. Returns sum over blocks of d * sum(q_j x_j).
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-60
	MOVQ w_base+0(FP), SI
	MOVQ x_base+24(FP), DI
	MOVQ blocks+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

q8loop:
	TESTQ CX, CX
	JEQ   q8reduce
	PREFETCHT0 3072(SI)
	MOVWLZX (SI), AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	VBROADCASTSS X8, Y8
	VPMOVSXBD 2(SI), Y4
	VPMOVSXBD 10(SI), Y5
	VPMOVSXBD 18(SI), Y6
	VPMOVSXBD 26(SI), Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS (DI), Y4, Y4
	VFMADD231PS 32(DI), Y5, Y4
	VFMADD231PS 64(DI), Y6, Y4
	VFMADD231PS 96(DI), Y7, Y4
	VFMADD231PS Y4, Y8, Y0
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q8loop

q8reduce:
	REDUCE
	VZEROUPPER
	MOVSS X0, ret+56(FP)
	RET

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func cvtF16AVX2(dst []float32, src []uint16)
// Widens len(src) binary16 values into dst (len(dst) >= len(src)).
TEXT ·cvtF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX

cvtf16loop8:
	CMPQ CX, $8
	JLT  cvtf16tail
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  cvtf16loop8

cvtf16tail:
	TESTQ CX, CX
	JEQ   cvtf16done
	MOVWLZX (SI), AX
	VMOVD   AX, X0
	VCVTPH2PS X0, X0
	VMOVSS X0, (DI)
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  cvtf16tail

cvtf16done:
	VZEROUPPER
	RET

// func cvtBF16AVX2(dst []float32, src []uint16)
// Widens len(src) bfloat16 values into dst (len(dst) >= len(src)).
TEXT ·cvtBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX

cvtbf16loop8:
	CMPQ CX, $8
	JLT  cvtbf16tail
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  cvtbf16loop8

cvtbf16tail:
	TESTQ CX, CX
	JEQ   cvtbf16done
	MOVWLZX (SI), AX
	SHLL    $16, AX
	MOVL    AX, (DI)
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  cvtbf16tail

cvtbf16done:
	VZEROUPPER
	RET

// func dotF32x2AVX2(a, x0, x1 []float32) (float32, float32)
// The dot products of a with x0 and with x1 (len(x0), len(x1) >= len(a)),
// each summed exactly as dotF32AVX2 sums it: a row of weights is loaded
// once for two inputs (prefill).
TEXT ·dotF32x2AVX2(SB), NOSPLIT, $0-80
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ x0_base+24(FP), DI
	MOVQ x1_base+48(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

x2loop32:
	CMPQ CX, $32
	JLT  x2loop8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	VFMADD231PS (DX), Y4, Y8
	VFMADD231PS 32(DX), Y5, Y9
	VFMADD231PS 64(DX), Y6, Y10
	VFMADD231PS 96(DX), Y7, Y11
	ADDQ $128, SI
	ADDQ $128, DI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP  x2loop32

x2loop8:
	CMPQ CX, $8
	JLT  x2reduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS (DX), Y4, Y8
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  x2loop8

x2reduce:
	REDUCE
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8

x2tail:
	TESTQ CX, CX
	JEQ   x2done
	VMOVSS (SI), X4
	VFMADD231SS (DI), X4, X0
	VFMADD231SS (DX), X4, X8
	ADDQ $4, SI
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JMP  x2tail

x2done:
	VZEROUPPER
	MOVSS X0, ret+72(FP)
	MOVSS X8, ret1+76(FP)
	RET

// func gemmF32x3x4AVX2(a []float32, lda int, x []float32, ldx int, blocks int, acc *[384]float32)
// The partial sums of dotF32AVX2 for 3 rows of a (row r at a[r*lda:]) times
// 4 inputs (input t at x[t*ldx:]) over the first 32*blocks elements: for
// each of dotF32AVX2's four 8-lane accumulators k, acc[k*96 + (r*4+t)*8 + j]
// is added to in exactly dotF32AVX2's order (one FMA per 32-element block).
// acc is loaded first and stored back, so a row may be done in pieces. The
// caller reduces the four accumulators as REDUCE does.
TEXT ·gemmF32x3x4AVX2(SB), NOSPLIT, $0-80
	G34SETUP(4)
	G34LOADACC(0)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
g34loop0:
	TESTQ CX, CX
	JEQ   g34loopdone0
	G34ROWSF32(0)
	G34FMA(0)
	ADDQ $128, AX
	ADDQ $128, R13
	DECQ CX
	JMP  g34loop0
g34loopdone0:
	G34STOREACC(0)
	G34LOADACC(384)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
g34loop1:
	TESTQ CX, CX
	JEQ   g34loopdone1
	G34ROWSF32(32)
	G34FMA(32)
	ADDQ $128, AX
	ADDQ $128, R13
	DECQ CX
	JMP  g34loop1
g34loopdone1:
	G34STOREACC(384)
	G34LOADACC(768)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
g34loop2:
	TESTQ CX, CX
	JEQ   g34loopdone2
	G34ROWSF32(64)
	G34FMA(64)
	ADDQ $128, AX
	ADDQ $128, R13
	DECQ CX
	JMP  g34loop2
g34loopdone2:
	G34STOREACC(768)
	G34LOADACC(1152)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
g34loop3:
	TESTQ CX, CX
	JEQ   g34loopdone3
	G34ROWSF32(96)
	G34FMA(96)
	ADDQ $128, AX
	ADDQ $128, R13
	DECQ CX
	JMP  g34loop3
g34loopdone3:
	G34STOREACC(1152)
	VZEROUPPER
	RET

// func gemmF16x3x4AVX2(a []uint16, lda int, x []float32, ldx int, blocks int, acc *[384]float32)
// gemmF32x3x4AVX2 for binary16 weights, widened in registers (exactly, by
// VCVTPH2PS) as dotF16AVX2 widens them: the partial sums are those of
// dotF16AVX2, so reducing them gives its results bit for bit.
TEXT ·gemmF16x3x4AVX2(SB), NOSPLIT, $0-80
	G34SETUP(2)
	G34LOADACC(0)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
h34loop0:
	TESTQ CX, CX
	JEQ   h34loopdone0
	G34ROWSF16(0)
	G34FMA(0)
	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JMP  h34loop0
h34loopdone0:
	G34STOREACC(0)
	G34LOADACC(384)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
h34loop1:
	TESTQ CX, CX
	JEQ   h34loopdone1
	G34ROWSF16(16)
	G34FMA(32)
	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JMP  h34loop1
h34loopdone1:
	G34STOREACC(384)
	G34LOADACC(768)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
h34loop2:
	TESTQ CX, CX
	JEQ   h34loopdone2
	G34ROWSF16(32)
	G34FMA(64)
	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JMP  h34loop2
h34loopdone2:
	G34STOREACC(768)
	G34LOADACC(1152)
	XORQ AX, AX
	XORQ R13, R13
	MOVQ BX, CX
h34loop3:
	TESTQ CX, CX
	JEQ   h34loopdone3
	G34ROWSF16(48)
	G34FMA(96)
	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JMP  h34loop3
h34loopdone3:
	G34STOREACC(1152)
	VZEROUPPER
	RET

// func reduce3x4AVX2(acc *[384]float32, out *[12]float32)
// out[i] = the sum of output i's four 8-lane accumulators in acc
// ([k][i][8], as gemmF32x3x4AVX2 leaves them), reduced exactly as REDUCE
// reduces dotF32AVX2's: the same adds in the same order.
TEXT ·reduce3x4AVX2(SB), NOSPLIT, $0-16
	MOVQ acc+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ $12, CX
r34loop:
	VMOVUPS (SI), Y0
	VMOVUPS 384(SI), Y1
	VMOVUPS 768(SI), Y2
	VMOVUPS 1152(SI), Y3
	REDUCE
	MOVSS X0, (DI)
	ADDQ $32, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  r34loop
	VZEROUPPER
	RET

// func dotF16RowsAVX2(w []uint16, cols int, x []float32, out []float32)
// out[r] = dotF16AVX2(w[r*cols:(r+1)*cols], x) for r < len(out): the same
// instructions row after row (one stream of weights, no call per row).
TEXT ·dotF16RowsAVX2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ out_base+56(FP), R8
	MOVQ out_len+64(FP), R9
	TESTQ R9, R9
	JEQ   f16rdone

f16rrow:
	MOVQ cols+24(FP), CX
	MOVQ x_base+32(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16rloop32:
	CMPQ CX, $32
	JLT  f16rloop8
	PREFETCHT0 4096(SI)
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f16rloop32

f16rloop8:
	CMPQ CX, $8
	JLT  f16rreduce
	VCVTPH2PS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16rloop8

f16rreduce:
	REDUCE

f16rtail:
	TESTQ CX, CX
	JEQ   f16rstore
	MOVWLZX (SI), AX
	VMOVD   AX, X4
	VCVTPH2PS X4, X4
	VFMADD231SS (DI), X4, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f16rtail

f16rstore:
	MOVSS X0, (R8)
	ADDQ $4, R8
	DECQ R9
	JNZ  f16rrow

f16rdone:
	VZEROUPPER
	RET

// func axpyAVX2(a float32, x []float32, y []float32)
// y[i] += a * x[i] for i < len(y) (len(x) >= len(y)): the product rounded,
// then the sum (VMULPS, VADDPS; no FMA), as the portable axpyGo does, so
// both give the same bits.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-56
	VBROADCASTSS a+0(FP), Y0
	MOVQ x_base+8(FP), SI
	MOVQ y_base+32(FP), DI
	MOVQ y_len+40(FP), CX

axpyloop32:
	CMPQ CX, $32
	JLT  axpyloop8
	VMULPS (SI), Y0, Y1
	VMULPS 32(SI), Y0, Y2
	VMULPS 64(SI), Y0, Y3
	VMULPS 96(SI), Y0, Y4
	VADDPS (DI), Y1, Y1
	VADDPS 32(DI), Y2, Y2
	VADDPS 64(DI), Y3, Y3
	VADDPS 96(DI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  axpyloop32

axpyloop8:
	CMPQ CX, $8
	JLT  axpytail
	VMULPS (SI), Y0, Y1
	VADDPS (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  axpyloop8

axpytail:
	TESTQ CX, CX
	JEQ   axpydone
	VMULSS (SI), X0, X1
	VADDSS (DI), X1, X1
	VMOVSS X1, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  axpytail

axpydone:
	VZEROUPPER
	RET

// func dotF32RowsAVX2(w []float32, stride int, x []float32, out []float32)
// out[r] = dotF32AVX2 of row r (len(x) elements at w[r*stride:]) and x,
// for r < len(out): the same accumulators, reduction and tail, so the
// results are dotF32's bit for bit (attention's scores of a page of keys).
TEXT ·dotF32RowsAVX2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ stride+24(FP), R10
	SHLQ $2, R10
	MOVQ out_base+56(FP), R8
	MOVQ out_len+64(FP), R9
	TESTQ R9, R9
	JEQ   f32rdone

f32rrow:
	MOVQ SI, R11
	MOVQ x_len+40(FP), CX
	MOVQ x_base+32(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32rloop32:
	CMPQ CX, $32
	JLT  f32rloop8
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f32rloop32

f32rloop8:
	CMPQ CX, $8
	JLT  f32rreduce
	VMOVUPS (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f32rloop8

f32rreduce:
	REDUCE

f32rtail:
	TESTQ CX, CX
	JEQ   f32rstore
	VMOVSS (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  f32rtail

f32rstore:
	MOVSS X0, (R8)
	ADDQ $4, R8
	LEAQ (R11)(R10*1), SI
	DECQ R9
	JNZ  f32rrow

f32rdone:
	VZEROUPPER
	RET
