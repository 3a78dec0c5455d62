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
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gemm512_amd64.s"), "w").write("\n".join(out) + "\n")
