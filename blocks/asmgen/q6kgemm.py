"""Writes blocks/q6kgemm_amd64.s (run: python3 blocks/asmgen/q6kgemm.py).

The assembly is generated because its kernels are the same loop body
unrolled for several tile shapes (rows x inputs) with different
registers; the .s file is committed, and TestAsmGenerated checks that it
is what this script writes.
"""
import os

out = []
w = out.append
w('//go:build amd64 && !purego')
w('')
w('#include "textflag.h"')
w('')
w('''// Q6_K weights times 8-bit activations (q6k.go) with AVX-512 VNNI, a
// pair of 32-weight groups per 512-bit register, exactly the operations
// of q6_KLanes in its order: per pair, the 6-bit values u (unsigned,
// assembled from ql's nibbles and qh's bit pairs) times the activations'
// q by VPDPBUSD from the activations' c/4 (= -32 * the lane's sum of q, so
// each lane is the sum of (u - 32) * q), converted to float32 and
// fused-multiply-added times (d*sc)*d_b.
//
// func q6_KxRxTAVX512(w []byte, ldw int, a []byte, lda int, nsb int, acc *[R*T*16]float32)
// Rows r < R at w[r*ldw:], inputs t < T at a[t*lda:], nsb blocks of 256;
// acc holds output r*T+t's 16 accumulators at (r*T+t)*16.
//
// Per block and row, Z29-Z31 hold d*sc for the 16 scales; per pair p,
// VPERMPS with q6kConst's index vector p spreads sc[4p..4p+3] to four
// lanes each (Z3-Z5). Z0-Z2 the rows' values, Z6 bytes of 0x03, Z7/Z15/Z28
// scratch, Z8-Z10 an input's q, c/4 and d, Z11 bytes of 0x0F, Z12/Z13
// temporaries, Z14 an index vector, Z16-Z27 the accumulators (one output:
// Z16, with the index vectors in Z17-Z20 and the shift counts in
// Z21-Z22). SI, DI, R8 rows; R10-R13 inputs; BX the weight offset (210
// bytes a block), AX the input offset (1024), CX blocks left, DX scratch.
''')
data = []
for p in range(4):
    for i in range(4):
        data += [4 * p + i] * 4
data += [0] * 8 + [0x00020002] * 8   # 16-bit shifts of qh: 0 (group 0), 2 (group 1)
data += [0x00040004] * 8 + [0x00060006] * 8   # 4 (group 2), 6 (group 3)
for i in range(0, len(data), 2):
    lo, hi = data[i], data[i + 1]
    w(f"DATA ·q6kConst+{i*4}(SB)/8, $0x{hi:08x}{lo:08x}")
w(f"GLOBL ·q6kConst(SB), RODATA|NOPTR, ${len(data)*4}")
w("")
rows = ['SI', 'DI', 'R8']
ins = ['R10', 'R11', 'R12', 'R13']


def consts():
    w("\tMOVL $0x0f0f0f0f, DX")
    w("\tVMOVD DX, X11")
    w("\tVPBROADCASTD X11, Z11")
    w("\tMOVL $0x03030303, DX")
    w("\tVMOVD DX, X6")
    w("\tVPBROADCASTD X6, Z6")


def preload():
    for p in range(4):
        w(f"\tVMOVDQU64 ·q6kConst+{64*p}(SB), Z{17+p}")
    w("\tVMOVDQU64 ·q6kConst+256(SB), Z21")
    w("\tVMOVDQU64 ·q6kConst+320(SB), Z22")


def sbbody(R, T):
    one = R * T == 1
    for r in range(R):
        RR = rows[r]
        w(f"\tPREFETCHT0 1024({RR})(BX*1)")
        w(f"\tPREFETCHT0 1088({RR})(BX*1)")
        w(f"\tPREFETCHT0 1152({RR})(BX*1)")
        w(f"\tPREFETCHT0 1216({RR})(BX*1)")
        w(f"\tVPMOVSXBD 192({RR})(BX*1), Z{29+r}")
        w(f"\tVCVTDQ2PS Z{29+r}, Z{29+r}")
        w(f"\tVPBROADCASTW 208({RR})(BX*1), Y13")
        w("\tVCVTPH2PS Y13, Z13")
        w(f"\tVMULPS Z13, Z{29+r}, Z{29+r}")
    for p in range(4):
        n, hb = p // 2, p % 2
        shifts = ("Z21" if hb == 0 else "Z22") if one else f"·q6kConst+{256 + 64*hb}(SB)"
        for r in range(R):
            RR = rows[r]
            w(f"\tVMOVDQU64 {64*n}({RR})(BX*1), Z7")
            if hb == 1:
                w("\tVPSRLW $4, Z7, Z7")
            w(f"\tVPANDD Z11, Z7, Z{r}")
            w(f"\tVBROADCASTI64X4 {128+32*n}({RR})(BX*1), Z15")
            w(f"\tVPSRLVW {shifts}, Z15, Z15")
            w("\tVPANDD Z6, Z15, Z15")
            w("\tVPSLLW $4, Z15, Z15")
            w(f"\tVPORD Z15, Z{r}, Z{r}")
        idx = f"Z{17+p}" if one else "Z14"
        if not one:
            w(f"\tVMOVDQU64 ·q6kConst+{64*p}(SB), Z14")
        for r in range(R):
            w(f"\tVPERMPS Z{29+r}, {idx}, Z{3+r}")
        for t in range(T):
            IN = ins[t]
            w(f"\tVMOVDQU64 {256*p}({IN})(AX*1), Z8")
            w(f"\tVMOVDQU64 {256*p+64}({IN})(AX*1), Z9")
            w("\tVPSRAD $2, Z9, Z9")
            w(f"\tVMOVUPS {256*p+128}({IN})(AX*1), Z10")
            for r in range(R):
                acc = f"Z{16+r*T+t}"
                w("\tVMOVDQA64 Z9, Z12")
                w(f"\tVPDPBUSD Z8, Z{r}, Z12")
                w("\tVCVTDQ2PS Z12, Z12")
                w(f"\tVMULPS Z10, Z{3+r}, Z13")
                w(f"\tVFMADD231PS Z13, Z12, {acc}")


def kernel(R, T):
    name = f"q6_Kx{R}x{T}AVX512"
    if R*T > 1:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nsb int, acc *[{R*T*16}]float32, zero bool)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-81")
    else:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nsb int, acc *[{R*T*16}]float32)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-80")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ ldw+24(FP), DX")
    for r in range(1, R):
        w(f"\tLEAQ ({rows[r-1]})(DX*1), {rows[r]}")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ lda+56(FP), DX")
    for t in range(1, T):
        w(f"\tLEAQ ({ins[t-1]})(DX*1), {ins[t]}")
    w("\tMOVQ nsb+64(FP), CX")
    w("\tMOVQ acc+72(FP), DX")
    if R*T > 1:
        # zero: start the accumulators at 0 instead of loading them.
        w("\tMOVBLZX zero+80(FP), BX")
        w("\tTESTQ BX, BX")
        w(f"\tJNE {name.lower()}zero")
    for i in range(R*T):
        w(f"\tVMOVUPS {i*64}(DX), Z{16+i}")
    if R*T > 1:
        w(f"\tJMP {name.lower()}accs")
        w(f"{name.lower()}zero:")
        for i in range(R*T):
            w(f"\tVPXORD Z{16+i}, Z{16+i}, Z{16+i}")
        w(f"{name.lower()}accs:")
    consts()
    if R * T == 1:
        preload()
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    lbl = name.lower()
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    w(f"{lbl}loop:")
    sbbody(R, T)
    w("\tADDQ $210, BX")
    w("\tADDQ $1024, AX")
    w("\tDECQ CX")
    w(f"\tJNZ {lbl}loop")
    w(f"{lbl}done:")
    w("\tMOVQ acc+72(FP), DX")
    for i in range(R * T):
        w(f"\tVMOVUPS Z{16+i}, {i*64}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")


for R, T in ((3, 4), (1, 1)):
    kernel(R, T)

name = "q6_KRowsAVX512"
w(f"// func {name}(w []byte, ldw int, a []byte, units int, nrows int, out []float32)")
w("// out[r] = the reduced accumulators (reduceLanes) of row r (at w[r*ldw:])")
w("// times input a, for r < nrows: the 1x1 kernel's operations row after")
w("// row, one stream of weights, without a call per row.")
w(f"TEXT ·{name}(SB), NOSPLIT, $0-96")
w("\tMOVQ w_base+0(FP), SI")
w("\tMOVQ a_base+32(FP), R10")
w("\tMOVQ out_base+72(FP), DI")
w("\tMOVQ nrows+64(FP), R9")
consts()
preload()
w("\tTESTQ R9, R9")
lbl = name.lower()
w(f"\tJEQ {lbl}end")
w(f"{lbl}row:")
w("\tVPXORD Z16, Z16, Z16")
w("\tMOVQ units+56(FP), CX")
w("\tXORQ AX, AX")
w("\tXORQ BX, BX")
w(f"{lbl}loop:")
sbbody(1, 1)
w("\tADDQ $210, BX")
w("\tADDQ $1024, AX")
w("\tDECQ CX")
w(f"\tJNZ {lbl}loop")
w("\tVEXTRACTF32X8 $1, Z16, Y0")
w("\tVADDPS Y0, Y16, Y0")
w("\tVEXTRACTF128 $1, Y0, X1")
w("\tVADDPS X1, X0, X0")
w("\tVHADDPS X0, X0, X0")
w("\tVHADDPS X0, X0, X0")
w("\tMOVSS X0, (DI)")
w("\tADDQ $4, DI")
w("\tADDQ ldw+24(FP), SI")
w("\tDECQ R9")
w(f"\tJNZ {lbl}row")
w(f"{lbl}end:")
w("\tVZEROUPPER")
w("\tRET")
w("")

open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "q6kgemm_amd64.s"), "w").write("\n".join(out) + "\n")
