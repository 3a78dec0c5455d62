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
	PREFETCHT0 512(SI)
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
	PREFETCHT0 512(SI)
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
	PREFETCHT0 512(SI)
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
