"""Writes blocks/f16x8_amd64.s (run: python3 blocks/asmgen/f16x8.py).

The binary16 kernels of CPUs with AVX2 but not AVX-512 ("f16x8" sums): a
row's dot product keeps ONE 8-lane accumulator, lane j summing elements
8i+j in order i = 0, 1, ... with a fused multiply-add each, then reduces
the 8 lanes as REDUCE8 does and adds the tail (fewer than 8 elements) one
element at a time. dotF16AVX2 keeps four accumulators instead (elements
8k..8k+7 of every 32), which a 3-row x 4-input GEMM tile on 16 AVX2
registers can only run as four passes over its data (gemmF16x3x4AVX2);
with one accumulator per output the tile is one pass, each cache line of
rows and inputs read once per call, which is what lets a batch of
sessions run near the FMA peak on 32 KiB L1 caches (see gemm_x8.go).

The .s file is committed, and TestAsmGenerated checks that it is what this
script writes.
"""
import os

out = []
w = out.append
w("//go:build amd64 && !purego\n")
w('#include "textflag.h"\n')
w("""// REDUCE8 sums the 8 lanes of Y0 into the low lane of X0: the upper 128
// bits onto the lower, then two horizontal adds, i.e.
// ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)) (reduce8 in gemm_x8.go).
#define REDUCE8 \\
	VEXTRACTF128 $1, Y0, X1 \\
	VADDPS X1, X0, X0 \\
	VHADDPS X0, X0, X0 \\
	VHADDPS X0, X0, X0
""")

# dotF16x8AVX2(w []uint16, x []float32) float32
w("""// func dotF16x8AVX2(w []uint16, x []float32) float32
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
	PREFETCHT0 4096(SI)""")
for u in range(4):
    w(f"\tVCVTPH2PS {16*u}(SI), Y{4+u}")
for u in range(4):
    w(f"\tVFMADD231PS {32*u}(DI), Y{4+u}, Y0")
w("""	ADDQ $64, SI
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
""")

# dotF16x8Rows4AVX2(w []uint16, cols int, x []float32, out []float32)
RROWS = ["SI", "R9", "R10", "R11"]
w("""// func dotF16x8Rows4AVX2(w []uint16, cols int, x []float32, out []float32)
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
	JLT  x8rows8""")
for r, reg in enumerate(RROWS):
    w(f"\tPREFETCHT0 2048({reg})(AX*1)")
for u in range(4):
    w(f"\tVMOVUPS {32*u}(DI)(AX*2), Y8")
    for r, reg in enumerate(RROWS):
        w(f"\tVCVTPH2PS {16*u}({reg})(AX*1), Y{9+r}")
        w(f"\tVFMADD231PS Y8, Y{9+r}, Y{4+r}")
w("""	ADDQ $64, AX
	SUBQ $32, CX
	JMP  x8rows32
x8rows8:
	CMPQ CX, $8
	JLT  x8rowsreduce
	VMOVUPS (DI)(AX*2), Y8""")
for r, reg in enumerate(RROWS):
    w(f"\tVCVTPH2PS ({reg})(AX*1), Y{9+r}")
    w(f"\tVFMADD231PS Y8, Y{9+r}, Y{4+r}")
w("""	ADDQ $16, AX
	SUBQ $8, CX
	JMP  x8rows8
x8rowsreduce:""")
for r in range(4):
    w(f"\tVMOVAPS Y{4+r}, Y0")
    w("\tREDUCE8")
    w(f"\tMOVSS X0, {4*r}(R8)")
w("""	ADDQ $16, R8
	ADDQ R13, SI
	ADDQ R13, R9
	ADDQ R13, R10
	ADDQ R13, R11
	DECQ R14
	JMP  x8rowsquad
x8rowsdone:
	VZEROUPPER
	RET
""")

ROWS = ["SI", "R9", "R8"]
INS = ["DI", "R10", "R11", "R12"]

# gemmF16x8TileAVX2: gemmF16x8AVX2 over `groups` groups of 3 rows in one call.
w("""
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
	MOVQ blocks+72(FP), CX""")
for i in range(12):
    w(f"\tVMOVUPS {32*i}(DX), Y{i}")
w("""	XORQ AX, AX
	XORQ R13, R13
	TESTQ CX, CX
	JEQ   x8tilestore
x8tileloop:
	TESTQ R15, R15
	JEQ   x8tilebody
	PREFETCHT1 (R14)
	ADDQ $64, R14
	DECQ R15
x8tilebody:""")
for u in range(4):
    for r in range(3):
        w(f"\tVCVTPH2PS {16*u}({ROWS[r]})(R13*1), Y{12+r}")
    for t in range(4):
        w(f"\tVMOVUPS {32*u}({INS[t]})(AX*1), Y15")
        for r in range(3):
            w(f"\tVFMADD231PS Y15, Y{12+r}, Y{r*4+t}")
w("""	ADDQ $128, AX
	ADDQ $64, R13
	DECQ CX
	JNZ  x8tileloop
x8tilestore:""")
for i in range(12):
    w(f"\tVMOVUPS Y{i}, {32*i}(DX)")
w("""	ADDQ $384, DX
	MOVQ ldwb-8(SP), BX
	LEAQ (R8)(BX*1), SI
	DECQ gleft-16(SP)
	JMP  x8tilegroup
x8tiledone:
	VZEROUPPER
	RET""")


# x8ReduceAVX2: the sums of full 3x4 tiles' accumulators, 4 outputs at a time.
w("""
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
x8reducegroup:""")
for r in range(3):
    for t in range(4):
        w(f"\tVMOVUPS {(r*4+t)*32}(SI), Y{t}")
    w("""\tVPERM2F128 $0x20, Y1, Y0, Y4
	VPERM2F128 $0x31, Y1, Y0, Y5
	VADDPS Y5, Y4, Y4
	VPERM2F128 $0x20, Y3, Y2, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VHADDPS Y4, Y4, Y4
	VEXTRACTF128 $1, Y4, X5""")
    w(f"\tVMOVSS X4, {4*r}(DI)")
    w(f"\tVEXTRACTPS $1, X4, {4*r}(R9)")
    w(f"\tVMOVSS X5, {4*r}(R8)")
    w(f"\tVEXTRACTPS $1, X5, {4*r}(R10)")
w("""	ADDQ $384, SI
	ADDQ $12, DI
	ADDQ $12, R8
	ADDQ $12, R9
	ADDQ $12, R10
	DECQ CX
	JNZ  x8reducegroup
x8reducedone:
	VZEROUPPER
	RET""")


open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "f16x8_amd64.s"), "w").write("\n".join(out) + "\n")
