"""Writes blocks/q8avx2_amd64.s (run: python3 blocks/asmgen/q8avx2.py).

Q8_0 weights (q32.go) times 8-bit activations (q8act.go) on CPUs with
AVX2 but without the VNNI kernels. A lane's integer sum is the same as
the VNNI kernels' and q8_0Lanes': lane j of block b is
sum_{k<4} w_{4j+k} q_{4j+k}, exact in int32, here computed as llama.cpp's
AVX2 Q8_0 x Q8_0 dot does: VPSIGNB moves w's sign onto q, VPMADDUBSW
multiplies |w| (unsigned) by that (signed) and adds pairs to int16 (at
most 2 * 128 * 127 = 32512, so never saturating: q is in [-127, 127]),
VPMADDWD by ones adds the pairs of pairs to int32. The sum is converted
to float32 and fused-multiply-added, times dw * dx, to accumulator
8*(b%2)+j (Y(2t) for even blocks, Y(2t+1) for odd), the float32 steps of
q8_0Lanes in its order, so a row's result is the same bit for bit in
every kernel here, in the VNNI kernels and in the portable lanes (up to
fma32's double rounding there), whatever the batch. An odd last block
runs alone and its zero partner adds 0 to the odd accumulators, as
q8_0Lanes' fma32(0, 0, acc) does.

The .s file is committed, and TestAsmGenerated checks that it is what
this script writes.
"""
import os

PF = 2048  # bytes ahead in the row that each block prefetches (as q8gemm.py)
out = []
w = out.append
w("//go:build amd64 && !purego")
w("")
w('#include "textflag.h"')
w("")
w("""// Registers: Y0-Y7 the accumulators (input t: Y(2t) even blocks,
// Y(2t+1) odd ones), Y8 int16 ones, Y9 the row's block w, Y10 |w|, Y11
// its dw as float32 in 8 lanes, Y12-Y15 scratch. SI the row, DI R8 R9 R10
// the inputs, BX the row's offset (34 bytes a block), AX the inputs'
// offset (256 bytes a pair), CX blocks left.
DATA q8avx2Ones<>+0(SB)/8, $0x0001000100010001
DATA q8avx2Ones<>+8(SB)/8, $0x0001000100010001
DATA q8avx2Ones<>+16(SB)/8, $0x0001000100010001
DATA q8avx2Ones<>+24(SB)/8, $0x0001000100010001
GLOBL q8avx2Ones<>(SB), RODATA|NOPTR, $32
""")
INS = ["DI", "R8", "R9", "R10"]


def block(T, h, prefetch):
    """One Q8_0 block (h: even 0 or odd 1 of its pair) for T inputs."""
    if prefetch:
        w(f"\tPREFETCHT0 {PF}(SI)(BX*1)")
    w(f"\tVMOVDQU {34 * h + 2}(SI)(BX*1), Y9")
    w(f"\tVPBROADCASTW {34 * h}(SI)(BX*1), X11")
    w("\tVPABSB Y9, Y10")
    w("\tVCVTPH2PS X11, Y11")
    for t in range(T):
        q, s = (12, 13) if t % 2 == 0 else (14, 15)
        acc = 2 * t + h
        w(f"\tVMOVDQU {32 * h}({INS[t]})(AX*1), Y{q}")
        w(f"\tVPSIGNB Y9, Y{q}, Y{q}")
        w(f"\tVPMADDUBSW Y{q}, Y10, Y{q}")
        w(f"\tVPMADDWD Y8, Y{q}, Y{q}")
        w(f"\tVCVTDQ2PS Y{q}, Y{q}")
        w(f"\tVMULPS {128 + 32 * h}({INS[t]})(AX*1), Y11, Y{s}")
        w(f"\tVFMADD231PS Y{s}, Y{q}, Y{acc}")


def loop(T, lbl, prefetch):
    """The blocks of CX: pairs, then an odd last block and its zero partner."""
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    w(f"{lbl}pair:")
    w("\tCMPQ CX, $2")
    w(f"\tJLT {lbl}tail")
    block(T, 0, prefetch)
    block(T, 1, False)
    w("\tADDQ $68, BX")
    w("\tADDQ $256, AX")
    w("\tSUBQ $2, CX")
    w(f"\tJMP {lbl}pair")
    w(f"{lbl}tail:")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    block(T, 0, False)
    w("\tVXORPS Y12, Y12, Y12")
    for t in range(T):
        w(f"\tVADDPS Y12, Y{2 * t + 1}, Y{2 * t + 1}")
    w(f"{lbl}done:")


def tile(T):
    name = f"q8_0x1x{T}Q8AVX2"
    if T > 1:
        w(f"// func {name}(w []byte, a []byte, lda int, nb int, acc *[{T * 16}]float32)")
        w(f"// Adds to acc[16t:16t+16] the accumulators of the Q8_0 row w times the")
        w(f"// {T} quantized inputs t at a[t*lda:], over nb blocks.")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-72")
        w("\tMOVQ a_base+24(FP), DI")
        w("\tMOVQ lda+48(FP), DX")
        for t in range(1, T):
            w(f"\tLEAQ ({INS[t - 1]})(DX*1), {INS[t]}")
        w("\tMOVQ nb+56(FP), CX")
        w("\tMOVQ acc+64(FP), DX")
    else:
        w(f"// func {name}(w []byte, a []byte, nb int, acc *[16]float32)")
        w("// Adds to acc the accumulators of the Q8_0 row w times the quantized")
        w("// input a over nb blocks.")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
        w("\tMOVQ a_base+24(FP), DI")
        w("\tMOVQ nb+48(FP), CX")
        w("\tMOVQ acc+56(FP), DX")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tVMOVDQU q8avx2Ones<>(SB), Y8")
    for i in range(2 * T):
        w(f"\tVMOVUPS {32 * i}(DX), Y{i}")
    loop(T, name.lower(), True)
    for i in range(2 * T):
        w(f"\tVMOVUPS Y{i}, {32 * i}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")


tile(4)
tile(1)

name = "q8_0RowsQ8AVX2"
lbl = name.lower()
w(f"""// func {name}(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)
// out[r] = reduceLanes of the accumulators of Q8_0 row r (at w[r*ldw:])
// times the quantized input a, from zeros, for r < nrows: the 1x1
// kernel's operations row after row, then reduceLanes' order (the odd
// accumulators onto the even, the upper four onto the lower four, two
// horizontal adds).
TEXT ·{name}(SB), NOSPLIT, $0-96
	MOVQ w_base+0(FP), SI
	MOVQ a_base+32(FP), DI
	MOVQ out_base+72(FP), R11
	MOVQ nrows+64(FP), R12
	VMOVDQU q8avx2Ones<>(SB), Y8
	TESTQ R12, R12
	JEQ {lbl}end
{lbl}row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ nb+56(FP), CX""")
loop(1, lbl, True)
w(f"""	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	MOVSS X0, (R11)
	ADDQ $4, R11
	ADDQ ldw+24(FP), SI
	DECQ R12
	JNZ {lbl}row
{lbl}end:
	VZEROUPPER
	RET""")
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "q8avx2_amd64.s"), "w").write("\n".join(out) + "\n")
