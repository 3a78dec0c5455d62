"""Writes blocks/q4kgemm_amd64.s (run: python3 blocks/asmgen/q4kgemm.py).

The assembly is generated because its kernels are the same loop body
unrolled for several tile shapes (rows x inputs) with different
registers; the .s file is committed, and TestAsmGenerated checks that it
is what this script writes.
"""
import os
out=[]
w=out.append
w('//go:build amd64 && !purego')
w('')
w('#include "textflag.h"')
w('')
w('''// Q4_K weights times 8-bit activations (q4k.go) with AVX-512 VNNI, a
// pair of 32-weight groups per 512-bit register (lanes 0-7 the low
// nibbles of a 32-byte chunk of q, lanes 8-15 the high ones), exactly the
// operations of q4_KLanes in its order: per pair, the nibbles (unsigned)
// times the activations' q (signed) by VPDPBUSD from zero, converted to
// float32 and multiplied by (d*sc)*d_b, the activations' Qdx lanes times
// -(dmin*m) fused-multiply-added to that, and the result added to the
// accumulator (one add per pair on the accumulator's dependency chain).
//
// func q4_KxRxTAVX512(w []byte, ldw int, a []byte, lda int, nsb int, acc *[R*T*16]float32)
// Rows r < R at w[r*ldw:], inputs t < T at a[t*lda:], nsb blocks of 256;
// acc holds output r*T+t's 16 accumulators at (r*T+t)*16, loaded first
// and stored back.
//
// Per block and row, the 12 scale bytes are unpacked as llama.cpp's
// get_scale_min_k4 (its utmp/kmask form, on 32-bit lanes) into Z29-Z31:
// lanes 0-7 d*sc_s, lanes 8-15 -(dmin*m_s). Per pair c, VPERMPS with the
// index vectors of q4kConst spreads them to Z3-Z5 (d*sc) and Z6, Z7, Z28
// (-(dmin*m)), eight lanes per group. Z0-Z2 the rows' nibbles, Z8-Z10 an
// input's q, d and Qdx, Z11 bytes of 0x0F, Z12/Z13 temporaries, Z14/Z15
// index vectors and scratch, Z16-Z27 the accumulators (one output: Z16,
// with the index vectors kept in Z17-Z24 and the shift counts in Z25). SI, DI, R8 rows;
// R10-R13 inputs; BX the weight offset (144 bytes a block), AX the input
// offset (1024), CX blocks left, DX scratch and acc.
''')
# constants
consts=[]
for c in range(4):
    consts += [2*c]*8 + [2*c+1]*8
    consts += [8+2*c]*8 + [8+2*c+1]*8
data=[]
for v in consts: data.append(v)
# k1,k2,k3 each 4 dwords
data += [0x3f3f3f3f]*4 + [0x0f0f0f0f]*4 + [0x03030303]*4 + [0,4,0,0]
data += [0]*8 + [0x80000000]*8
data += [0]*8 + [0x00040004]*8   # 16-bit shift counts: 0 for the low half, 4 for the high half
for i in range(0,len(data),2):
    lo,hi=data[i],data[i+1]
    w(f"DATA ·q4kConst+{i*4}(SB)/8, $0x{hi:08x}{lo:08x}")
w(f"GLOBL ·q4kConst(SB), RODATA|NOPTR, ${len(data)*4}")
w("")
rows=['SI','DI','R8']
ins=['R10','R11','R12','R13']
negm=['Z6','Z7','Z28']
def preload():
    for c in range(4):
        w(f"\tVMOVDQU64 ·q4kConst+{128*c}(SB), Z{17+2*c}")
        w(f"\tVMOVDQU64 ·q4kConst+{128*c+64}(SB), Z{18+2*c}")
    w("\tVMOVDQU64 ·q4kConst+640(SB), Z25")

def sbbody(R,T):
    SHIFTS = "Z25" if R*T == 1 else "·q4kConst+640(SB)"
    for r in range(R):
        RR=rows[r]
        w(f"\tPREFETCHT0 1024({RR})(BX*1)")
        w(f"\tPREFETCHT0 1088({RR})(BX*1)")
        w(f"\tPREFETCHT0 1152({RR})(BX*1)")
        w(f"\tVMOVDQU 4({RR})(BX*1), X14")
        w("\tVPSRLD $6, X14, X15")
        w("\tVPAND ·q4kConst+544(SB), X15, X15")
        w("\tVPSLLD $4, X15, X15")
        w("\tVPSHUFD $0xAA, X14, X13")
        w("\tVPSRLVD ·q4kConst+560(SB), X13, X13")
        w("\tVPAND ·q4kConst+528(SB), X13, X13")
        w("\tVPOR X15, X13, X13")
        w("\tVPAND ·q4kConst+512(SB), X14, X14")
        w("\tVPUNPCKLDQ X13, X14, X14")
        w(f"\tVPMOVZXBD X14, Z{29+r}")
        w(f"\tVCVTDQ2PS Z{29+r}, Z{29+r}")
        w(f"\tVPBROADCASTW ({RR})(BX*1), X13")
        w(f"\tVPBROADCASTW 2({RR})(BX*1), X15")
        w("\tVINSERTI128 $1, X15, Y13, Y13")
        w("\tVCVTPH2PS Y13, Z13")
        w("\tVXORPS ·q4kConst+576(SB), Z13, Z13")
        w(f"\tVMULPS Z13, Z{29+r}, Z{29+r}")
    for c in range(4):
        for r in range(R):
            RR=rows[r]
            w(f"\tVBROADCASTI64X4 {16+32*c}({RR})(BX*1), Z{r}")
            w(f"\tVPSRLVW {SHIFTS}, Z{r}, Z{r}")
            w(f"\tVPANDD Z11, Z{r}, Z{r}")
        if R*T == 1:
            # One output: the index vectors stay in Z17-Z24 (loaded once).
            i1, i2 = f"Z{17+2*c}", f"Z{18+2*c}"
        else:
            i1, i2 = "Z14", "Z15"
            w(f"\tVMOVDQU64 ·q4kConst+{128*c}(SB), Z14")
            w(f"\tVMOVDQU64 ·q4kConst+{128*c+64}(SB), Z15")
        for r in range(R):
            w(f"\tVPERMPS Z{29+r}, {i1}, Z{3+r}")
            w(f"\tVPERMPS Z{29+r}, {i2}, {negm[r]}")
        for t in range(T):
            IN=ins[t]
            w(f"\tVMOVDQU64 {256*c}({IN})(AX*1), Z8")
            w(f"\tVMOVUPS {256*c+128}({IN})(AX*1), Z9")
            w(f"\tVMOVUPS {256*c+192}({IN})(AX*1), Z10")
            for r in range(R):
                acc=f"Z{16+r*T+t}"
                w("\tVPXORD Z12, Z12, Z12")
                w(f"\tVPDPBUSD Z8, Z{r}, Z12")
                w("\tVCVTDQ2PS Z12, Z12")
                w(f"\tVMULPS Z9, Z{3+r}, Z13")
                w("\tVMULPS Z13, Z12, Z12")
                w(f"\tVFMADD231PS {negm[r]}, Z10, Z12")
                w(f"\tVADDPS Z12, {acc}, {acc}")

def kernel(R,T):
    name=f"q4_Kx{R}x{T}AVX512"
    if R*T > 1:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nsb int, acc *[{R*T*16}]float32, zero bool)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-81")
    else:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nsb int, acc *[{R*T*16}]float32)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-80")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ ldw+24(FP), DX")
    for r in range(1,R):
        w(f"\tLEAQ ({rows[r-1]})(DX*1), {rows[r]}")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ lda+56(FP), DX")
    for t in range(1,T):
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
    w("\tMOVL $0x0f0f0f0f, DX")
    w("\tVMOVD DX, X11")
    w("\tVPBROADCASTD X11, Z11")
    if R*T == 1:
        preload()
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    lbl=name.lower()
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    w(f"{lbl}loop:")
    sbbody(R,T)
    w("\tADDQ $144, BX")
    w("\tADDQ $1024, AX")
    w("\tDECQ CX")
    w(f"\tJNZ {lbl}loop")
    w(f"{lbl}done:")
    w("\tMOVQ acc+72(FP), DX")
    for i in range(R*T):
        w(f"\tVMOVUPS Z{16+i}, {i*64}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")
for R,T in ((3,4),(1,1)):
    kernel(R,T)

def rowskernel():
    name="q4_KRowsAVX512"
    w(f"// func {name}(w []byte, ldw int, a []byte, units int, nrows int, out []float32)")
    w("// out[r] = the reduced accumulators (reduceLanes) of row r (at w[r*ldw:])")
    w("// times input a, for r < nrows: the 1x1 kernel's operations row after")
    w("// row, one stream of weights, without a call per row.")
    w(f"TEXT ·{name}(SB), NOSPLIT, $0-96")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ out_base+72(FP), DI")
    w("\tMOVQ nrows+64(FP), R9")
    w("\tMOVL $0x0f0f0f0f, DX")
    w("\tVMOVD DX, X11")
    w("\tVPBROADCASTD X11, Z11")
    preload()
    w("\tTESTQ R9, R9")
    lbl=name.lower()
    w(f"\tJEQ {lbl}end")
    w(f"{lbl}row:")
    w("\tVPXORD Z16, Z16, Z16")
    w("\tMOVQ units+56(FP), CX")
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    pass
    w(f"{lbl}loop:")
    sbbody(1,1)
    w("\tADDQ $144, BX")
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
rowskernel()
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "q4kgemm_amd64.s"), "w").write("\n".join(out)+"\n")
