//go:build amd64 && !purego

#include "textflag.h"

// Read loops of kernel_amd64.go. Each keeps four independent accumulators
// so the adds never wait on each other and the loads stay in flight; the
// sums make every loaded byte part of the result, so nothing is elided.

// func sumAVX512(p unsafe.Pointer, n int) uint64
TEXT ·sumAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

loop256:
	CMPQ CX, $256
	JB   loop64
	VMOVDQU64 0(SI), Z4
	VMOVDQU64 64(SI), Z5
	VMOVDQU64 128(SI), Z6
	VMOVDQU64 192(SI), Z7
	VPADDQ Z4, Z0, Z0
	VPADDQ Z5, Z1, Z1
	VPADDQ Z6, Z2, Z2
	VPADDQ Z7, Z3, Z3
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  loop256

loop64:
	CMPQ CX, $64
	JB   reduce
	VMOVDQU64 0(SI), Z4
	VPADDQ Z4, Z0, Z0
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  loop64

reduce:
	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDQ Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// func sumAVX2(p unsafe.Pointer, n int) uint64
TEXT ·sumAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

loop128:
	CMPQ CX, $128
	JB   loop32
	VMOVDQU 0(SI), Y4
	VMOVDQU 32(SI), Y5
	VMOVDQU 64(SI), Y6
	VMOVDQU 96(SI), Y7
	VPADDQ Y4, Y0, Y0
	VPADDQ Y5, Y1, Y1
	VPADDQ Y6, Y2, Y2
	VPADDQ Y7, Y3, Y3
	ADDQ $128, SI
	SUBQ $128, CX
	JMP  loop128

loop32:
	CMPQ CX, $32
	JB   reduce2
	VMOVDQU 0(SI), Y4
	VPADDQ Y4, Y0, Y0
	ADDQ $32, SI
	SUBQ $32, CX
	JMP  loop32

reduce2:
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET
