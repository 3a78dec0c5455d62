"""Writes blocks/q8gemm_amd64.s (run: python3 blocks/asmgen/q8gemm.py).

The assembly is generated because its kernels are the same loop body
unrolled for several tile shapes (rows x inputs) with different
registers; the .s file is committed, and TestAsmGenerated checks that it
is what this script writes.
"""
import os
PF = 2048  # bytes ahead of the rows that each block prefetches
out=[]
w=out.append
w('//go:build amd64 && !purego')
w('')
w('#include "textflag.h"')
w('')
w('''// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL weights (q32.go) times 8-bit activations
// (q8act.go) with AVX-512 VNNI
// (VPDPBUSD on 512-bit registers), two blocks at a time: lanes 0-7 of a
// register belong to the even block of a pair and lanes 8-15 to the odd
// one. For each weight row r and input t, lane j of block b is
// sum_{k<4} w_{4j+k} q_{4j+k}, computed as (w + 128) times q plus the
// input's c_j; it is converted to float32 and fused-multiply-added, times
// dw * dx, to the output's accumulator 8*(b%2)+j: the same operations in
// the same order in every kernel here and in q8_0Lanes, so a row's result
// does not depend on the kernel or the batch. An odd last block runs alone
// with a zero partner, as in q8_0Lanes. The caller reduces the 16
// accumulators (reduceLanes). Q4_0 (q4_0x..., q4_0Lanes) unpacks a
// block's 16 bytes of nibbles into its 32 unsigned values 0..15 in
// element order and starts lane j at c_j / 16 = -8 * (its q's sum), so
// the lane is sum (nib - 8) q; Z11 then holds bytes of 0x0F. Q5_0 adds
// 16 to the bytes whose bit of qh is set (K3 holds both blocks' qh, Z31
// bytes of 0x10) and starts the lane at c_j / 8 = -16 * (the q's sum).
// Q4_1 and Q5_1 (x = d*q + m) start the lane at 0 and add a second
// product per block, float32(c_j) * ((m * -1/128) * dx), with m * -1/128
// in Z28-Z30 (Z7: -1/128) and float32(c_j) in Z6 (q32.go lanes32).
// IQ4_NL looks its nibbles up (VPSHUFB) in Z31, its 16 levels plus 128,
// and starts the lane at c_j, as Q8_0 does.
//
// func q8_0xRxTAVX512(w []byte, ldw int, a []byte, lda int, nb int, acc *[R*T*16]float32)
// Rows r < R at w[r*ldw:], inputs t < T at a[t*lda:], nb blocks; acc
// holds output r*T+t's 16 accumulators at (r*T+t)*16, loaded first and
// stored back.
//
// Registers: Z0-Z2 the rows' 64 bytes (+128), Z3-Z5 their scales dw
// (8 lanes per block), Z8 an input's q, Z9 its c, Z10 its dx, Z11 bytes
// of 0x80, Z12 a lane sum, Z13 dw*dx, X14/X15 scratch, Z16-Z27 the
// accumulators. SI, DI, R8 rows; R10-R13 inputs; BX the weight offset
// (68 bytes a pair), AX the input offset (256), CX blocks left, DX
// scratch and acc.
''')
rows=['SI','DI','R8']
ins=['R10','R11','R12','R13']
def pairs(R,T,tail,f="q8_0"):
    blk=BLOCK[f]
    for r in range(R):
        if not tail:
            w(f"\tPREFETCHT0 {PF}({rows[r]})(BX*1)")
        if f != "q8_0":
            # Nibbles: byte i of a block's 16 is element i (low nibble)
            # and element 16+i (high); unpacked into element order,
            # block 2p in bytes 0-31 and block 2p+1 in bytes 32-63.
            qs=QS[f]
            w(f"\tVMOVDQU {qs}({rows[r]})(BX*1), X{r}")
            if not tail:
                w(f"\tVINSERTI128 $1, {blk+qs}({rows[r]})(BX*1), Y{r}, Y{r}")
            w(f"\tVPSRLW $4, Y{r}, Y14")
            w(f"\tVPAND Y11, Y{r}, Y{r}")
            w("\tVPAND Y11, Y14, Y14")
            w(f"\tVINSERTI64X4 $1, Y14, Z{r}, Z{r}")
            w(f"\tVSHUFI64X2 $0xD8, Z{r}, Z{r}, Z{r}")
            if f == "iq4_nl":
                # The nibbles index the levels + 128 (Z31), unsigned.
                w(f"\tVPSHUFB Z{r}, Z31, Z{r}")
            if f in QH:
                # The fifth bits: bit j of a block's qh is element j's;
                # K3 holds block 2p's 32 bits, then block 2p+1's, and
                # adds 16 to those bytes.
                qh=QH[f]
                if tail:
                    w(f"\tKMOVD {qh}({rows[r]})(BX*1), K3")
                else:
                    w(f"\tKMOVD {qh}({rows[r]})(BX*1), K1")
                    w(f"\tKMOVD {blk+qh}({rows[r]})(BX*1), K2")
                    w("\tKUNPCKDQ K1, K2, K3")
                w(f"\tVPADDB Z31, Z{r}, K3, Z{r}")
        else:
            w(f"\tVMOVDQU 2({rows[r]})(BX*1), Y{r}")
            if not tail:
                w(f"\tVINSERTI64X4 $1, 36({rows[r]})(BX*1), Z{r}, Z{r}")
            w(f"\tVPXORD Z11, Z{r}, Z{r}")
        halves(rows[r], 0, tail, blk, f"Z{3+r}")
        if f in MIN:
            # m * (-1/128), to multiply c_j = -128 * (its q's sum).
            halves(rows[r], 2, tail, blk, f"Z{28+r}")
            w(f"\tVMULPS Z7, Z{28+r}, Z{28+r}")
    for t in range(T):
        w(f"\tVMOVDQU64 ({ins[t]})(AX*1), Z8")
        w(f"\tVMOVDQU64 64({ins[t]})(AX*1), Z9")
        if f in SHIFT:
            w(f"\tVPSRAD ${SHIFT[f]}, Z9, Z9")
        if f in MIN:
            w("\tVCVTDQ2PS Z9, Z6")
        w(f"\tVMOVUPS 128({ins[t]})(AX*1), Z10")
        for r in range(R):
            if f in MIN:
                w("\tVPXORD Z12, Z12, Z12")
            else:
                w("\tVMOVDQA64 Z9, Z12")
            w(f"\tVPDPBUSD Z8, Z{r}, Z12")
            w("\tVCVTDQ2PS Z12, Z12")
            w(f"\tVMULPS Z10, Z{3+r}, Z13")
            w(f"\tVFMADD231PS Z13, Z12, Z{16+r*T+t}")
            if f in MIN:
                w(f"\tVMULPS Z10, Z{28+r}, Z13")
                w(f"\tVFMADD231PS Z13, Z6, Z{16+r*T+t}")
def halves(row, off, tail, blk, dst):
    # The binary16 at off of the pair's two blocks, 8 lanes each, as float32.
    w(f"\tVPBROADCASTW {off}({row})(BX*1), X14")
    if not tail:
        w(f"\tVPBROADCASTW {blk+off}({row})(BX*1), X15")
        w("\tVINSERTI128 $1, X15, Y14, Y14")
    w(f"\tVCVTPH2PS Y14, {dst}")
BLOCK={"q8_0":34,"q4_0":18,"q4_1":20,"q5_0":22,"q5_1":24,"iq4_nl":18}  # bytes of one block (ggml-common.h)
QS={"q4_0":2,"q4_1":4,"q5_0":6,"q5_1":8,"iq4_nl":2}  # offset of the 16 bytes of nibbles
QH={"q5_0":2,"q5_1":4}  # offset of the 32 fifth bits
MIN={"q4_1","q5_1"}  # blocks with a minimum m (binary16 at offset 2): x = d*q + m
SHIFT={"q4_0":4,"q5_0":3}  # lane start c_j >> SHIFT = -8 or -16 times the q's sum
CONST={"q8_0":"$0x80808080"}  # Z11: the bytes XORed (q8_0) or masked (0x0F, the others)
def consts(f):
    w(f"\tMOVL {CONST.get(f, '$0x0F0F0F0F')}, DX")
    w("\tVPBROADCASTD DX, Z11")
    if f == "iq4_nl":
        w("\tVBROADCASTI32X4 iq4nlLevels<>(SB), Z31")
    if f in QH:
        w("\tMOVL $0x10101010, DX")
        w("\tVPBROADCASTD DX, Z31")
    if f in MIN:
        w("\tMOVL $0xBC000000, DX")  # -1/128
        w("\tVPBROADCASTD DX, Z7")
def kernel(R,T,f="q8_0"):
    name=f"{f}x{R}x{T}AVX512"
    if R*T > 1:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nb int, acc *[{R*T*16}]float32, zero bool)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-81")
    else:
        w(f"// func {name}(w []byte, ldw int, a []byte, lda int, nb int, acc *[{R*T*16}]float32)")
        w(f"TEXT ·{name}(SB), NOSPLIT, $0-80")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ ldw+24(FP), DX")
    for r in range(1,R):
        w(f"\tLEAQ ({rows[r-1]})(DX*1), {rows[r]}")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ lda+56(FP), DX")
    for t in range(1,T):
        w(f"\tLEAQ ({ins[t-1]})(DX*1), {ins[t]}")
    w("\tMOVQ nb+64(FP), CX")
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
    consts(f)
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    lbl=name.lower()
    w(f"{lbl}loop:")
    w("\tCMPQ CX, $2")
    w(f"\tJLT {lbl}tail")
    pairs(R,T,False,f)
    w(f"\tADDQ ${2*BLOCK[f]}, BX")
    w("\tADDQ $256, AX")
    w("\tSUBQ $2, CX")
    w(f"\tJMP {lbl}loop")
    w(f"{lbl}tail:")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    pairs(R,T,True,f)
    w(f"{lbl}done:")
    w("\tMOVQ acc+72(FP), DX")
    for i in range(R*T):
        w(f"\tVMOVUPS Z{16+i}, {i*64}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")
FORMATS=("q8_0","q4_0","q4_1","q5_0","q5_1","iq4_nl")
# IQ4_NL's 16 levels (kvalues_iq4nl in ggml-common.h) plus 128, as the
# unsigned bytes VPDPBUSD multiplies; the lane starts at c_j as Q8_0's.
LEVELS=[-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
for i in range(0,16,8):
    v=sum((LEVELS[i+k]+128)<<(8*k) for k in range(8))
    w(f"DATA iq4nlLevels<>+{i}(SB)/8, $0x{v:016x}")
w("GLOBL iq4nlLevels<>(SB), RODATA|NOPTR, $16")
w("")
for f in FORMATS:
    for R,T in ((3,4),(1,1)):
        kernel(R,T,f)

def rowskernel(f="q8_0"):
    name=f"{f}RowsAVX512"
    w(f"// func {name}(w []byte, ldw int, a []byte, units int, nrows int, out []float32)")
    w("// out[r] = the reduced accumulators (reduceLanes) of row r (at w[r*ldw:])")
    w("// times input a, for r < nrows: the 1x1 kernel's operations row after")
    w("// row, one stream of weights, without a call per row.")
    w(f"TEXT ·{name}(SB), NOSPLIT, $0-96")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ out_base+72(FP), DI")
    w("\tMOVQ nrows+64(FP), R9")
    consts(f)
    w("\tTESTQ R9, R9")
    lbl=name.lower()
    w(f"\tJEQ {lbl}end")
    w(f"{lbl}row:")
    w("\tVPXORD Z16, Z16, Z16")
    w("\tMOVQ units+56(FP), CX")
    w("\tXORQ AX, AX")
    w("\tXORQ BX, BX")
    w(f"{lbl}loop:")
    w("\tCMPQ CX, $2")
    w(f"\tJLT {lbl}tail")
    pairs(1,1,False,f)
    w(f"\tADDQ ${2*BLOCK[f]}, BX")
    w("\tADDQ $256, AX")
    w("\tSUBQ $2, CX")
    w(f"\tJMP {lbl}loop")
    w(f"{lbl}tail:")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    pairs(1,1,True,f)
    w(f"{lbl}done:")
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
for f in FORMATS:
    rowskernel(f)
w("""// func reduceQ8x12AVX2(acc *[192]float32, out *[12]float32)
// out[i] = reduceLanes of acc[16i:16i+16]: the second eight accumulators
// added onto the first, the upper four onto the lower four, then two
// horizontal adds ((u0+u1)+(u2+u3)), the order reduceLanes uses.
TEXT ·reduceQ8x12AVX2(SB), NOSPLIT, $0-16
	MOVQ acc+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ $12, CX
rq8loop:
	VMOVUPS (SI), Y0
	VADDPS 32(SI), Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	MOVSS X0, (DI)
	ADDQ $64, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  rq8loop
	VZEROUPPER
	RET""")
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "q8gemm_amd64.s"), "w").write("\n".join(out)+"\n")
