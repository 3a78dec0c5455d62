"""Writes blocks/q8avx2_amd64.s (run: python3 blocks/asmgen/q8avx2.py).

The q32 weight formats (q32.go: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL)
times 8-bit activations (q8act.go) on CPUs with AVX2 but without the
VNNI kernels. A lane's integer sum is the same as the VNNI kernels' and
the portable lanes' (q8_0Lanes ... iq4_nlLanes): lane j of block b is
sum_{k<4} w_{4j+k} q_{4j+k}, exact in int32. A block's 32 values are
first put in element order in one register: Q8_0's bytes as they are;
the other formats' 16 bytes of nibbles split into the low nibbles
(elements 0-15) and the high ones (16-31), as llama.cpp's
dequantize_row_q4_0 orders them; Q5_0 and Q5_1 add 16 where bit e of qh
is set (broadcast, VPSHUFB, VPOR and VPCMPEQB make a byte of 0xFF per
set bit, as llama.cpp's bytes_from_bits_32); Q4_0 subtracts 8, Q5_0 16;
IQ4_NL looks its levels up with VPSHUFB. Signed values (Q8_0, Q4_0,
Q5_0, IQ4_NL) are multiplied as llama.cpp's AVX2 Q8_0 x Q8_0 dot does:
VPSIGNB moves w's sign onto q, VPMADDUBSW multiplies |w| (unsigned) by
that (signed) and adds pairs to int16 (at most 2 * 128 * 127 = 32512, so
never saturating: q is in [-127, 127]); the unsigned values of Q4_1 and
Q5_1 (0..31) go into VPMADDUBSW as they are. VPMADDWD by ones adds the
pairs of pairs to int32. The sum is converted to float32 and
fused-multiply-added, times dw * dx, to accumulator 8*(b%2)+j (Y(2t) for
even blocks, Y(2t+1) for odd); Q4_1 and Q5_1 then add float32(c_j) *
((m * -1/128) * dx), c_j from the activations' layout: lanes32's
float32 steps in its order, so a row's result is the same bit for bit in
every kernel here, in the VNNI kernels and in the portable lanes (up to
fma32's double rounding there), whatever the batch. An odd last block
runs alone and its zero partner adds 0 to the odd accumulators, as
lanes32's fma32(0, 0, acc) does.

The .s file is committed, and TestAsmGenerated checks that it is what
this script writes.
"""
import os

PF = 2048  # bytes ahead in the row that each block prefetches (as q8gemm.py)
FORMATS = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"]
BLOCK = {"q8_0": 34, "q4_0": 18, "q4_1": 20, "q5_0": 22, "q5_1": 24, "iq4_nl": 18}
QS = {"q8_0": 2, "q4_0": 2, "q4_1": 4, "q5_0": 6, "q5_1": 8, "iq4_nl": 2}  # offset of the values
QH = {"q5_0": 2, "q5_1": 4}  # offset of the fifth bits
SIGNED = {"q8_0", "q4_0", "q5_0", "iq4_nl"}
WITHMIN = {"q4_1", "q5_1"}
# iq4Levels (quant.go), llama.cpp's kvalues_iq4nl.
LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
out = []
w = out.append
w("//go:build amd64 && !purego")
w("")
w('#include "textflag.h"')
w("")
w("""// Registers: Y0-Y7 the accumulators (input t: Y(2t) even blocks,
// Y(2t+1) odd ones), Y8 int16 ones, Y9 the row's block w (32 values in
// element order), Y10 |w| (Q4_1, Q5_1: m * -1/128 in 8 lanes), Y11 its
// dw as float32 in 8 lanes, Y12-Y15 scratch. SI the row, DI R8 R9 R10
// the inputs, BX the row's offset (two blocks a pair), AX the inputs'
// offset (256 bytes a pair), CX blocks left.""")


def data(name, words):
    """A 32-byte read-only constant of four 8-byte words."""
    for i, v in enumerate(words):
        w(f"DATA {name}<>+{8 * i}(SB)/8, ${v:#018x}")
    w(f"GLOBL {name}<>(SB), RODATA|NOPTR, ${8 * len(words)}")


def bytes8(b):
    return int.from_bytes(bytes([b & 0xFF] * 8), "little")


data("q8avx2Ones", [0x0001000100010001] * 4)
data("q8avx2Nibble", [bytes8(0x0F)] * 4)
data("q8avx2Eight", [bytes8(8)] * 4)
data("q8avx2Sixteen", [bytes8(16)] * 4)
# Byte i of the broadcast qh gets byte i/8 (within each 128-bit lane, whose
# dwords all hold qh), then every bit but bit i%8 set.
data("q8avx2BitShuf", [bytes8(0), bytes8(1), bytes8(2), bytes8(3)])
data("q8avx2BitMask", [0x7FBFDFEFF7FBFDFE] * 4)
lv = int.from_bytes(bytes(v & 0xFF for v in LEVELS), "little")
data("q8avx2Levels", [lv & (2**64 - 1), lv >> 64] * 2)
data("q8avx2MinScale", [0xBC000000BC000000] * 4)  # -1/128 as float32, 8 lanes
w("")
INS = ["DI", "R8", "R9", "R10"]


def values(f, h):
    """Block h's 32 values of format f into Y9 in element order, |w| or m
    * -1/128 into Y10, dw into Y11."""
    o = BLOCK[f] * h
    if f == "q8_0":
        w(f"\tVMOVDQU {o + 2}(SI)(BX*1), Y9")
    else:
        w(f"\tVMOVDQU {o + QS[f]}(SI)(BX*1), X9")
        w("\tVPSRLW $4, X9, X10")
        w("\tVINSERTI128 $1, X10, Y9, Y9")
        w("\tVPAND q8avx2Nibble<>(SB), Y9, Y9")
        if f in QH:
            w(f"\tVPBROADCASTD {o + QH[f]}(SI)(BX*1), Y10")
            w("\tVPSHUFB q8avx2BitShuf<>(SB), Y10, Y10")
            w("\tVPOR q8avx2BitMask<>(SB), Y10, Y10")
            w("\tVPCMPEQB Y12, Y12, Y12")
            w("\tVPCMPEQB Y12, Y10, Y10")
            w("\tVPAND q8avx2Sixteen<>(SB), Y10, Y10")
            w("\tVPOR Y10, Y9, Y9")
        if f == "q4_0":
            w("\tVPSUBB q8avx2Eight<>(SB), Y9, Y9")
        if f == "q5_0":
            w("\tVPSUBB q8avx2Sixteen<>(SB), Y9, Y9")
        if f == "iq4_nl":
            w("\tVMOVDQU q8avx2Levels<>(SB), Y10")
            w("\tVPSHUFB Y9, Y10, Y9")
    w(f"\tVPBROADCASTW {o}(SI)(BX*1), X11")
    w("\tVCVTPH2PS X11, Y11")
    if f in SIGNED:
        w("\tVPABSB Y9, Y10")
    else:
        w(f"\tVPBROADCASTW {o + 2}(SI)(BX*1), X10")
        w("\tVCVTPH2PS X10, Y10")
        w("\tVMULPS q8avx2MinScale<>(SB), Y10, Y10")


def block(f, T, h, prefetch):
    """One block of format f (h: even 0 or odd 1 of its pair) for T inputs."""
    if prefetch:
        w(f"\tPREFETCHT0 {PF}(SI)(BX*1)")
    values(f, h)
    for t in range(T):
        q, s = (12, 13) if t % 2 == 0 else (14, 15)
        acc = 2 * t + h
        w(f"\tVMOVDQU {32 * h}({INS[t]})(AX*1), Y{q}")
        if f in SIGNED:
            w(f"\tVPSIGNB Y9, Y{q}, Y{q}")
            w(f"\tVPMADDUBSW Y{q}, Y10, Y{q}")
        else:
            w(f"\tVPMADDUBSW Y{q}, Y9, Y{q}")
        w(f"\tVPMADDWD Y8, Y{q}, Y{q}")
        w(f"\tVCVTDQ2PS Y{q}, Y{q}")
        w(f"\tVMULPS {128 + 32 * h}({INS[t]})(AX*1), Y11, Y{s}")
        w(f"\tVFMADD231PS Y{s}, Y{q}, Y{acc}")
        if f in WITHMIN:
            w(f"\tVCVTDQ2PS {64 + 32 * h}({INS[t]})(AX*1), Y{q}")
            w(f"\tVMULPS {128 + 32 * h}({INS[t]})(AX*1), Y10, Y{s}")
            w(f"\tVFMADD231PS Y{s}, Y{q}, Y{acc}")


def loop(f, T, lbl, prefetch):
    """The blocks of CX: pairs, then an odd last block and its zero partner."""
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    w(f"{lbl}pair:")
    w("\tCMPQ CX, $2")
    w(f"\tJLT {lbl}tail")
    block(f, T, 0, prefetch)
    block(f, T, 1, False)
    w(f"\tADDQ ${2 * BLOCK[f]}, BX")
    w("\tADDQ $256, AX")
    w("\tSUBQ $2, CX")
    w(f"\tJMP {lbl}pair")
    w(f"{lbl}tail:")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    block(f, T, 0, False)
    w("\tVXORPS Y12, Y12, Y12")
    for t in range(T):
        w(f"\tVADDPS Y12, Y{2 * t + 1}, Y{2 * t + 1}")
    w(f"{lbl}done:")


def tile(f, T):
    name = f"{f}x1x{T}Q8AVX2"
    F = f.upper()
    if T > 1:
        w(f"// func {name}(w []byte, a []byte, lda int, nb int, acc *[{T * 16}]float32)")
        w(f"// Adds to acc[16t:16t+16] the accumulators of the {F} row w times the")
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
        w(f"// Adds to acc the accumulators of the {F} row w times the quantized")
        w("// input a over nb blocks.")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-64")
        w("\tMOVQ a_base+24(FP), DI")
        w("\tMOVQ nb+48(FP), CX")
        w("\tMOVQ acc+56(FP), DX")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tVMOVDQU q8avx2Ones<>(SB), Y8")
    for i in range(2 * T):
        w(f"\tVMOVUPS {32 * i}(DX), Y{i}")
    loop(f, T, name.lower(), True)
    for i in range(2 * T):
        w(f"\tVMOVUPS Y{i}, {32 * i}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")


def rows(f):
    name = f"{f}RowsQ8AVX2"
    lbl = name.lower()
    w(f"""// func {name}(w []byte, ldw int, a []byte, nb int, nrows int, out []float32)
// out[r] = reduceLanes of the accumulators of {f.upper()} row r (at w[r*ldw:])
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
    loop(f, 1, lbl, True)
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
	RET
""")


for f in FORMATS:
    tile(f, 4)
    tile(f, 1)
    rows(f)
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "q8avx2_amd64.s"), "w").write("\n".join(out).rstrip("\n") + "\n")
