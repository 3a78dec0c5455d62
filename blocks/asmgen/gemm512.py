"""Writes blocks/gemm512_amd64.s (run: python3 blocks/asmgen/gemm512.py).

The assembly is generated because its kernels are the same loop body
unrolled for several tile shapes (rows x inputs) with different
registers; the .s file is committed, and TestAsmGenerated checks that it
is what this script writes.
"""
import os
# generates blocks/gemm512_amd64.s
out = []
w = out.append
w("//go:build amd64 && !purego\n")
w('#include "textflag.h"\n')
w("""// AVX-512 versions of the 3x4 GEMM kernels of kernels_amd64.s
// (gemmF32x3x4AVX2, gemmF16x3x4AVX2), same arguments, same accumulator
// layout and the same partial sums bit for bit: dotF32AVX2's four 8-lane
// accumulators k = 0..3 cover elements 8k..8k+7 of every 32-element block,
// so a 16-lane register over elements 0..15 of each block holds
// accumulators 0 and 1 side by side, and one over 16..31 holds 2 and 3.
// Each lane still gets one fused multiply-add per block in block order;
// only the register width differs, and the work is one pass over the row
// instead of four.
//
// Registers: Z0-Z11 the low halves (accumulators 0|1) of output
// i = row*4+input, Z12-Z23 the high halves (2|3); Z24-Z26 the 3 rows'
// 16 elements; Z27 an input's. SI, R9, R8 rows; DI, R10, R11, R12 inputs;
// AX the input offset, R13 the weight offset; CX the blocks left; DX acc,
// [k][i][8] float32 (k*384 + i*32 bytes).
""")
def loadacc():
    for i in range(12):
        w(f"\tVMOVUPS {i*32}(DX), Y{i}")
        w(f"\tVINSERTF32X8 $1, {384+i*32}(DX), Z{i}, Z{i}")
        w(f"\tVMOVUPS {768+i*32}(DX), Y{12+i}")
        w(f"\tVINSERTF32X8 $1, {1152+i*32}(DX), Z{12+i}, Z{12+i}")
def storeacc():
    for i in range(12):
        w(f"\tVMOVUPS Y{i}, {i*32}(DX)")
        w(f"\tVEXTRACTF32X8 $1, Z{i}, {384+i*32}(DX)")
        w(f"\tVMOVUPS Y{12+i}, {768+i*32}(DX)")
        w(f"\tVEXTRACTF32X8 $1, Z{12+i}, {1152+i*32}(DX)")
inputs = ["DI", "R10", "R11", "R12"]
rows = ["SI", "R9", "R8"]
def half(h, f16):
    # rows
    for r, reg in enumerate(rows):
        if f16:
            w(f"\tVCVTPH2PS {h*32}({reg})(R13*1), Z{24+r}")
        else:
            w(f"\tVMOVUPS {h*64}({reg})(R13*1), Z{24+r}")
    for t, reg in enumerate(inputs):
        w(f"\tVMOVUPS {h*64}({reg})(AX*1), Z27")
        for r in range(3):
            w(f"\tVFMADD231PS Z27, Z{24+r}, Z{h*12 + r*4 + t}")
def kernel(name, f16):
    esize = 2 if f16 else 4
    w(f"// func {name}(a []{'uint16' if f16 else 'float32'}, lda int, x []float32, ldx int, blocks int, acc *[384]float32)")
    w(f"TEXT ·{name}(SB), NOSPLIT, $0-80")
    w("\tMOVQ a_base+0(FP), SI")
    w("\tMOVQ lda+24(FP), R8")
    w(f"\tIMULQ ${esize}, R8")
    w("\tLEAQ (SI)(R8*1), R9")
    w("\tLEAQ (R9)(R8*1), R8")
    w("\tMOVQ x_base+32(FP), DI")
    w("\tMOVQ ldx+56(FP), R13")
    w("\tSHLQ $2, R13")
    w("\tLEAQ (DI)(R13*1), R10")
    w("\tLEAQ (R10)(R13*1), R11")
    w("\tLEAQ (R11)(R13*1), R12")
    w("\tMOVQ blocks+64(FP), CX")
    w("\tMOVQ acc+72(FP), DX")
    loadacc()
    w("\tXORQ AX, AX")
    w("\tXORQ R13, R13")
    lbl = name.lower()
    w(f"{lbl}loop:")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ   {lbl}done")
    half(0, f16)
    half(1, f16)
    w("\tADDQ $128, AX")
    w(f"\tADDQ ${32*esize}, R13")
    w("\tDECQ CX")
    w(f"\tJMP  {lbl}loop")
    w(f"{lbl}done:")
    storeacc()
    w("\tVZEROUPPER")
    w("\tRET\n")
kernel("gemmF32x3x4AVX512", False)
kernel("gemmF16x3x4AVX512", True)

# gemmF16x6x4AVX512: 6 rows x 4 inputs in two passes over the blocks, one
# per half of a 32-element block (elements 0..15, then 16..31), so that the
# 24 accumulators of a half fit the registers beside the 6 rows and an
# input. Each lane still gets one fused multiply-add per block in block
# order: the partial sums are those of two gemmF16x3x4 calls (rows 0..2,
# then 3..5), and acc holds their two [384]float32 blocks one after the
# other. Each input load now serves 6 rows instead of 3, which halves the
# inputs' traffic from L2 per multiply-add.
#
# Registers: Z(r*4+t) the accumulator halves of row r, input t; Z24-Z29
# the rows' 16 elements; Z30 an input's. SI row 0, R8 row 3, R9 the row
# stride (rows 1, 2, 4, 5 are SI+R9, SI+2*R9, R8+R9, R8+2*R9); DI input 0,
# R10 input 3, R11 the input stride; CX the blocks left; DX acc.
rows6 = ["(SI)", "(SI)(R9*1)", "(SI)(R9*2)", "(R8)", "(R8)(R9*1)", "(R8)(R9*2)"]
x4addr = ["(DI)", "(DI)(R11*1)", "(DI)(R11*2)", "(R10)"]
def acc6(h, r, t):
    """Byte offsets of the low and high 256 bits of accumulator (r, t) in half h."""
    b, i = r // 3, (r % 3) * 4 + t
    return b * 1536 + (2 * h) * 384 + i * 32, b * 1536 + (2 * h + 1) * 384 + i * 32
def kernel6(name):
    w(f"// func {name}(a []uint16, lda int, x []float32, ldx int, blocks int, acc *[768]float32)")
    w(f"TEXT ·{name}(SB), NOSPLIT, $0-80")
    w("\tMOVQ acc+72(FP), DX")
    lbl = name.lower()
    for h in range(2):
        w("\tMOVQ a_base+0(FP), SI")
        w("\tMOVQ lda+24(FP), R9")
        w("\tSHLQ $1, R9")
        w("\tLEAQ (SI)(R9*2), R8")
        w("\tADDQ R9, R8")
        w("\tMOVQ x_base+32(FP), DI")
        w("\tMOVQ ldx+56(FP), R11")
        w("\tSHLQ $2, R11")
        w("\tLEAQ (DI)(R11*2), R10")
        w("\tADDQ R11, R10")
        w("\tMOVQ blocks+64(FP), CX")
        for r in range(6):
            for t in range(4):
                lo, hi = acc6(h, r, t)
                w(f"\tVMOVUPS {lo}(DX), Y{r*4+t}")
                w(f"\tVINSERTF32X8 $1, {hi}(DX), Z{r*4+t}, Z{r*4+t}")
        w(f"{lbl}loop{h}:")
        w("\tTESTQ CX, CX")
        w(f"\tJEQ   {lbl}done{h}")
        for r in range(6):
            w(f"\tVCVTPH2PS {h*32}{rows6[r]}, Z{24+r}")
        for t in range(4):
            w(f"\tVMOVUPS {h*64}{x4addr[t]}, Z30")
            for r in range(6):
                w(f"\tVFMADD231PS Z30, Z{24+r}, Z{r*4+t}")
        w("\tADDQ $64, SI")
        w("\tADDQ $64, R8")
        w("\tADDQ $128, DI")
        w("\tADDQ $128, R10")
        w("\tDECQ CX")
        w(f"\tJMP  {lbl}loop{h}")
        w(f"{lbl}done{h}:")
        for r in range(6):
            for t in range(4):
                lo, hi = acc6(h, r, t)
                w(f"\tVMOVUPS Y{r*4+t}, {lo}(DX)")
                w(f"\tVEXTRACTF32X8 $1, Z{r*4+t}, {hi}(DX)")
    w("\tVZEROUPPER")
    w("\tRET\n")
kernel6("gemmF16x6x4AVX512")
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gemm512_amd64.s"), "w").write("\n".join(out) + "\n")
