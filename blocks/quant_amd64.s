//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA kernels of quantized super-blocks; see quant_amd64.go.

// func dotQ4KBlockAVX2(qs *byte, x *float32, sm *[16]float32) float32
// Returns sum over the 8 groups g of one block_q4_K of
// sm[2g] * sum(q*x) - sm[2g+1] * sum(x), q the group's nibbles: qs holds
// 128 bytes (chunk c of 32 bytes: low nibbles group 2c, high nibbles group
// 2c+1), x 256 floats. Y0 accumulates the even groups, Y1 the odd ones.
TEXT ·dotQ4KBlockAVX2(SB), NOSPLIT, $0-28
	MOVQ qs+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ sm+16(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVQ $4, CX

q4kloop:
	VPMOVZXBD 0(SI), Y4
	VPMOVZXBD 8(SI), Y5
	VPMOVZXBD 16(SI), Y6
	VPMOVZXBD 24(SI), Y7
	// Low nibbles: group 2c, x[0:32].
	VPAND Y15, Y4, Y8
	VPAND Y15, Y5, Y9
	VPAND Y15, Y6, Y10
	VPAND Y15, Y7, Y11
	VCVTDQ2PS Y8, Y8
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VMULPS (DI), Y8, Y8
	VFMADD231PS 32(DI), Y9, Y8
	VFMADD231PS 64(DI), Y10, Y8
	VFMADD231PS 96(DI), Y11, Y8
	VMOVUPS (DI), Y12
	VADDPS 32(DI), Y12, Y12
	VADDPS 64(DI), Y12, Y12
	VADDPS 96(DI), Y12, Y12
	VBROADCASTSS 0(DX), Y13
	VBROADCASTSS 4(DX), Y14
	VFMADD231PS Y8, Y13, Y0
	VFNMADD231PS Y12, Y14, Y0
	// High nibbles: group 2c+1, x[32:64].
	VPSRLD $4, Y4, Y4
	VPSRLD $4, Y5, Y5
	VPSRLD $4, Y6, Y6
	VPSRLD $4, Y7, Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS 128(DI), Y4, Y4
	VFMADD231PS 160(DI), Y5, Y4
	VFMADD231PS 192(DI), Y6, Y4
	VFMADD231PS 224(DI), Y7, Y4
	VMOVUPS 128(DI), Y12
	VADDPS 160(DI), Y12, Y12
	VADDPS 192(DI), Y12, Y12
	VADDPS 224(DI), Y12, Y12
	VBROADCASTSS 8(DX), Y13
	VBROADCASTSS 12(DX), Y14
	VFMADD231PS Y4, Y13, Y1
	VFNMADD231PS Y12, Y14, Y1
	ADDQ $32, SI
	ADDQ $256, DI
	ADDQ $16, DX
	DECQ CX
	JNZ  q4kloop

	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q6CHUNK adds the products of 8 consecutive l (bytes B of ql, ql+32 and
// qh; floats at byte offset XO of x, then +32, +64, +96 elements) to Y0..Y3,
// scaled by sm at byte offset SO (+2, +4, +6 groups): q1 = ql&15 | (qh&3)<<4,
// q2 = ql[+32]&15 | (qh>>2&3)<<4, q3 = ql>>4 | (qh>>4&3)<<4, q4 = ql[+32]>>4
// | (qh>>6)<<4, each minus 32. Y15 = 15, Y14 = 3, Y13 = 32 (int32 lanes).
#define Q6CHUNK(B, XO, SO) \
	VPMOVZXBD B(SI), Y4 \
	VPMOVZXBD (B+32)(SI), Y5 \
	VPMOVZXBD B(BX), Y6 \
	VPAND Y15, Y4, Y7 \
	VPAND Y14, Y6, Y8 \
	VPSLLD $4, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	VPSUBD Y13, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS XO(DI), Y7, Y7 \
	VBROADCASTSS SO(DX), Y12 \
	VFMADD231PS Y7, Y12, Y0 \
	VPAND Y15, Y5, Y7 \
	VPSRLD $2, Y6, Y8 \
	VPAND Y14, Y8, Y8 \
	VPSLLD $4, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	VPSUBD Y13, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS (XO+128)(DI), Y7, Y7 \
	VBROADCASTSS (SO+8)(DX), Y12 \
	VFMADD231PS Y7, Y12, Y1 \
	VPSRLD $4, Y4, Y7 \
	VPSRLD $4, Y6, Y8 \
	VPAND Y14, Y8, Y8 \
	VPSLLD $4, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	VPSUBD Y13, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS (XO+256)(DI), Y7, Y7 \
	VBROADCASTSS (SO+16)(DX), Y12 \
	VFMADD231PS Y7, Y12, Y2 \
	VPSRLD $4, Y5, Y7 \
	VPSRLD $6, Y6, Y8 \
	VPSLLD $4, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	VPSUBD Y13, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS (XO+384)(DI), Y7, Y7 \
	VBROADCASTSS (SO+24)(DX), Y12 \
	VFMADD231PS Y7, Y12, Y3

// func dotQ6KBlockAVX2(blk *byte, x *float32, sm *[16]float32) float32
// Returns the dot product of one block_q6_K (blk: ql[128], qh[64], ...)
// with x[:256], sm[g] being d*scales[g] of group g of 16. Each half h of
// 128 elements reads ql[64h:], qh[32h:], x[128h:] and sm[8h:].
TEXT ·dotQ6KBlockAVX2(SB), NOSPLIT, $0-28
	MOVQ blk+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ sm+16(FP), DX
	LEAQ 128(SI), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $3, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $32, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVQ $2, CX

q6kloop:
	Q6CHUNK(0, 0, 0)
	Q6CHUNK(8, 32, 0)
	Q6CHUNK(16, 64, 4)
	Q6CHUNK(24, 96, 4)
	ADDQ $64, SI
	ADDQ $32, BX
	ADDQ $512, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  q6kloop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q5VEC adds 8 lanes (bytes V of ql and qh, element offset 8V/V*4 bytes
// of x) of one Q5_K chunk to Y8 (low nibbles: q·x of group 2c), Y9 (high
// nibbles, group 2c+1, x + 32 elements), Y10 and Y11 (their sums of x). The
// fifth bits are bits 2c and 2c+1 of qh, shifted down by X6 = 2c. Y14 = 1,
// Y15 = 15 (int32 lanes).
#define Q5VEC(V) \
	VPMOVZXBD V(SI), Y4 \
	VPMOVZXBD V(BX), Y5 \
	VPSRLD X6, Y5, Y5 \
	VPAND Y15, Y4, Y7 \
	VPAND Y14, Y5, Y12 \
	VPSLLD $4, Y12, Y12 \
	VPOR Y12, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VFMADD231PS (V*4)(DI), Y7, Y8 \
	VADDPS (V*4)(DI), Y10, Y10 \
	VPSRLD $4, Y4, Y7 \
	VPSRLD $1, Y5, Y12 \
	VPAND Y14, Y12, Y12 \
	VPSLLD $4, Y12, Y12 \
	VPOR Y12, Y7, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VFMADD231PS (128+V*4)(DI), Y7, Y9 \
	VADDPS (128+V*4)(DI), Y11, Y11

// func dotQ5KBlockAVX2(blk *byte, x *float32, sm *[16]float32) float32
// Returns the dot product of one block_q5_K (blk: d, dmin, scales[12],
// qh[32], qs[128]) with x[:256]: sum over groups g of sm[2g]*sum(q*x) -
// sm[2g+1]*sum(x), q = the nibble of qs plus 16 times its qh bit. Chunk c
// of 64 elements reads qs[32c:32c+32] and bits 2c, 2c+1 of qh.
TEXT ·dotQ5KBlockAVX2(SB), NOSPLIT, $0-28
	MOVQ blk+0(FP), BX
	MOVQ x+8(FP), DI
	MOVQ sm+16(FP), DX
	LEAQ 48(BX), SI
	ADDQ $16, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $1, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	XORQ AX, AX

q5kloop:
	VMOVD AX, X6
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	Q5VEC(0)
	Q5VEC(8)
	Q5VEC(16)
	Q5VEC(24)
	VBROADCASTSS 0(DX), Y2
	VBROADCASTSS 4(DX), Y3
	VFMADD231PS Y8, Y2, Y0
	VFNMADD231PS Y10, Y3, Y0
	VBROADCASTSS 8(DX), Y2
	VBROADCASTSS 12(DX), Y3
	VFMADD231PS Y9, Y2, Y1
	VFNMADD231PS Y11, Y3, Y1
	ADDQ $32, SI
	ADDQ $256, DI
	ADDQ $16, DX
	ADDQ $2, AX
	CMPQ AX, $8
	JLT  q5kloop

	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot4NLGroupsAVX2(qs *byte, stride int, sc *[8]float32, x *float32, n int, levels *[16]int8) float32
// Returns sum over n groups g (1..8) of sc[g] * sum(levels[q]*x) over the
// group's 32 values: 16 bytes at qs + g*stride, element j < 16 the low
// nibble of byte j, element j+16 its high nibble (block_q4_0,
// block_iq4_nl, and the groups of block_iq4_xs); x[32g:32g+32]. The
// nibbles index the 16 int8 levels with VPSHUFB.
TEXT ·dot4NLGroupsAVX2(SB), NOSPLIT, $0-52
	MOVQ qs+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ sc+16(FP), DX
	MOVQ x+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ levels+40(FP), AX
	VMOVDQU (AX), X14
	MOVL $0x0F0F0F0F, BX
	VMOVD BX, X13
	VPBROADCASTD X13, X13
	VXORPS Y0, Y0, Y0

nl4loop:
	VMOVDQU (SI), X4
	VPAND X13, X4, X5
	VPSRLW $4, X4, X6
	VPAND X13, X6, X6
	VPSHUFB X5, X14, X5
	VPSHUFB X6, X14, X6
	VPMOVSXBD X5, Y7
	VPSRLDQ $8, X5, X5
	VPMOVSXBD X5, Y8
	VPMOVSXBD X6, Y9
	VPSRLDQ $8, X6, X6
	VPMOVSXBD X6, Y10
	VCVTDQ2PS Y7, Y7
	VCVTDQ2PS Y8, Y8
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VMULPS (DI), Y7, Y7
	VFMADD231PS 32(DI), Y8, Y7
	VFMADD231PS 64(DI), Y9, Y7
	VFMADD231PS 96(DI), Y10, Y7
	VBROADCASTSS (DX), Y11
	VFMADD231PS Y7, Y11, Y0
	ADDQ R8, SI
	ADDQ $128, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  nl4loop

	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET
