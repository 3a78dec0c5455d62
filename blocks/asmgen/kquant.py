"""Writes blocks/kquant_amd64.s (run: python3 blocks/asmgen/kquant.py).

The assembly is generated because its kernels are the same loop body
unrolled for two weight types and two tile shapes (rows x inputs) with
different registers; the .s file is committed, and TestAsmGenerated
checks that it is what this script writes.
"""
import os

out = []
w = out.append

# Byte offsets in kqConst.
SC4 = 0        # Q4_K: VPSHUFB controls spreading the scales over chunk c (4 x 64)
MINS4 = 256    # Q4_K: VPSHUFB control doubling the minimums (32, padded to 64)
SHIFT4 = 320   # Q4_K: 16-bit shift counts, 0 for the low half, 4 for the high half
SC6A = 384     # Q6_K: VPSHUFB control, 128-bit lane L gets scale L of its table
SC6B = 448     # Q6_K: the same with scale 4+L
CNT6A = 512    # Q6_K: left shifts of qh for part 0 (4, then 2)
CNT6B = 576    # Q6_K: right shifts of qh for part 1 (0, then 2)
B30 = 640      # bytes of 0x30
B0F = 704      # bytes of 0x0F
K4 = 768       # Q4_K scale unpacking: 0x3f.., 0x0f.., 0x03.. and shift counts [0,4,0,0]
SIGN = 832     # float32 sign bits
NEG32 = 848    # int16 -32 (16 of them)
CNT5 = 896     # Q5_K: 16-bit shift counts of qh for chunk c (4 x 64): 2c for the low half, 2c+1 for the high half
B10 = 1152     # bytes of 0x10
CNT3Q = 1216   # Q3_K: 16-bit shift counts of qs for chunk c%2 (2 x 64): 2i for pass i = 2(c%2) (low half), 2i+2 (high half)
CNT3H = 1344   # Q3_K: 16-bit shift counts of hmask for chunk c (4 x 64): 4h+i (low half), 4h+i+1 (high half)
B03 = 1600     # bytes of 0x03
B04 = 1664     # bytes of 0x04
NEG4 = 1728    # int16 -4 (16 of them)
SH3Q = 1760    # Q3_K scale unpacking: qword shifts [0, 4]
SH3D = 1776    # Q3_K scale unpacking: dword shifts [0, 2, 4, 6]
B20 = 1792     # bytes of 0x20 (16)
IQSL = 1808    # IQ4_XS: dword shifts of scales_l for groups 0-7 (4g)
IQSH = 1840    # IQ4_XS: dword shifts of scales_h for groups 0-7 (2g)
IQ32 = 1872    # IQ4_XS: dword 32 (8 of them)
IQIDX = 1904   # IQ4_XS: VPERMD indexes spreading group scales 2c, 2c+1 over chunk c (4 x 64)
LEVELS = 2160  # IQ4_XS: kvalues_iq4nl as signed bytes (16)
CONST_BYTES = 2176
PF = 4096  # prefetch distance, bytes (2048 and 1024 measured slower on decode)


def consts():
    b = bytearray(CONST_BYTES)
    for c in range(4):
        for lane in range(4):
            pair = (4 * c, 4 * c + 1) if lane < 2 else (4 * c + 2, 4 * c + 3)
            for i in range(16):
                b[SC4 + 64 * c + 16 * lane + i] = pair[i % 2]
    for lane in range(2):
        for i in range(8):
            idx = 4 * lane + i // 2
            b[MINS4 + 16 * lane + 2 * i] = 2 * idx
            b[MINS4 + 16 * lane + 2 * i + 1] = 2 * idx + 1
    for i in range(32):
        b[SHIFT4 + 2 * i] = 0 if i < 16 else 4
    for lane in range(4):
        for i in range(16):
            b[SC6A + 16 * lane + i] = 2 * lane + i % 2
            b[SC6B + 16 * lane + i] = 8 + 2 * lane + i % 2
    for i in range(32):
        b[CNT6A + 2 * i] = 4 if i < 16 else 2
        b[CNT6B + 2 * i] = 0 if i < 16 else 2
    for i in range(64):
        b[B30 + i] = 0x30
        b[B0F + i] = 0x0F
    for i, v in enumerate([0x3f3f3f3f] * 4 + [0x0f0f0f0f] * 4 + [0x03030303] * 4 + [0, 4, 0, 0]):
        b[K4 - 0 + 4 * i:K4 + 4 * i + 4] = v.to_bytes(4, "little")
    for i in range(4):
        b[SIGN + 4 * i:SIGN + 4 * i + 4] = (0x80000000).to_bytes(4, "little")
    for i in range(16):
        b[NEG32 + 2 * i:NEG32 + 2 * i + 2] = (-32 & 0xffff).to_bytes(2, "little")
    for c in range(4):
        for i in range(32):
            b[CNT5 + 64 * c + 2 * i] = 2 * c if i < 16 else 2 * c + 1
    for i in range(64):
        b[B10 + i] = 0x10
    for p in range(2):
        for i in range(32):
            b[CNT3Q + 64 * p + 2 * i] = 4 * p if i < 16 else 4 * p + 2
    for c in range(4):
        h, i0 = c // 2, 2 * (c % 2)
        for i in range(32):
            b[CNT3H + 64 * c + 2 * i] = 4 * h + i0 if i < 16 else 4 * h + i0 + 1
    for i in range(64):
        b[B03 + i] = 0x03
        b[B04 + i] = 0x04
    for i in range(16):
        b[NEG4 + 2 * i:NEG4 + 2 * i + 2] = (-4 & 0xffff).to_bytes(2, "little")
    b[SH3Q + 8] = 4
    for i in range(4):
        b[SH3D + 4 * i] = 2 * i
    for i in range(16):
        b[B20 + i] = 0x20
    for g in range(8):
        b[IQSL + 4 * g] = 4 * g
        b[IQSH + 4 * g] = 2 * g
        b[IQ32 + 4 * g] = 32
    for c in range(4):
        for j in range(16):
            b[IQIDX + 64 * c + 4 * j] = 2 * c + j // 8
    levels = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]
    for i, v in enumerate(levels):
        b[LEVELS + i] = v & 0xff
    return b


# K4 occupies 64 bytes (768..831); SIGN 16 (832..847); NEG32 32 (848..879);
# 880..895 unused; CNT5 256 (896..1151); B10 64 (1152..1215); CNT3Q 128
# (1216..1343); CNT3H 256 (1344..1599); B03, B04 64 each; NEG4 32; SH3Q, SH3D,
# B20 16 each (..1807).

w('//go:build amd64 && !purego')
w('')
w('#include "textflag.h"')
w('')
w('''// K-quant weights (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and IQ4_XS times Q8_K activations
// (q8k.go, q4k.go, q6k.go, iq4xs.go) with AVX-512 BW and VNNI: per block of
// 256 weights and output, the integers of q2_KLanes .. q6_KLanes
// (VPMADDUBSW of the weights' unsigned values with the activations' q,
// VPDPWSSD with the group scales as 16-bit integers; IQ4_XS: the levels'
// magnitudes with q negated where a level is negative, so that
// VPMADDUBSW cannot saturate), then their float32 steps in their order. Chunk c of a block (64 weights) fills one 512-bit register.
//
// func q4_Kx1xTAVX512(w []byte, a []byte, lda int, nsb int, acc *[192]float32, zero bool, out []float32, ldo int), T = 1..12
// func q2_Kx1xTAVX512, q3_..., q5_..., q6_Kx1xTAVX512, iq4_xsx1xTAVX512 (...same...)
// One row w times inputs t < T at a[t*lda:], nsb blocks of 256; acc
// holds output t's 16 accumulators at t*16, loaded first (or zeros when
// zero is set) and stored back, or, when out is not empty, reduced
// (reduceLanes) into out[t*ldo] instead of stored. A row's scales are
// unpacked once per block for all T inputs.
// func q4_KRowsAVX512(w []byte, ldw int, a []byte, units int, nrows int, out []float32)
// func q2_KRowsAVX512, q3_..., q5_..., q6_KRowsAVX512, iq4_xsRowsAVX512 (...same...)
// out[r] = reduceLanes of the accumulators of row r (at w[r*ldw:]) times
// input a, for r < nrows: the T = 1 body, row after row.
//
// Registers: Z0 a chunk of the row's weights, Z1 the VPMADDUBSW
// products, Z2-Z5 the row's 16-bit scales of chunks 0-3 (a 64-byte
// vector each, VPDPWSSD's multiplier), Z6-Z17 the integer sums I of
// output t at Z(6+t), Z18-Z29 its accumulators, Z30 Q4_K's shift counts
// (IQ4_XS: zeros; K1 the signs of a chunk's levels), Z31 bytes of 0x0F; Z6-Z8 are the scale unpacking's temporaries (before
// any I of the block is written). SI the row, BX the weight offset;
// inputs 0-5 from R10 and 6-11 from DI, with R11 = lda, R12 = 3*lda,
// R13 = 5*lda as indexes; CX blocks left; R9 a 64-byte aligned scratch on
// the stack (Q4_K's doubled minimums).
''')
cb = consts()
for i in range(0, CONST_BYTES, 8):
    v = int.from_bytes(cb[i:i + 8], "little")
    w(f"DATA ·kqConst+{i}(SB)/8, $0x{v:016x}")
w(f"GLOBL ·kqConst(SB), RODATA|NOPTR, ${CONST_BYTES}")
w("")

UNIT = {'q2': 84, 'q3': 110, 'q4': 144, 'q5': 176, 'q6': 210, 'iq4_xs': 136}
KINDS = ('q2', 'q3', 'q4', 'q5', 'q6', 'iq4_xs')


def tilename(kind, T):
    return f"{kind}_Kx1x{T}AVX512" if kind[0] == 'q' else f"{kind}x1x{T}AVX512"


def rowsname(kind):
    return f"{kind}_KRowsAVX512" if kind[0] == 'q' else f"{kind}RowsAVX512"


def tablename(kind):
    return f"{kind}_KTilesAVX512" if kind[0] == 'q' else f"{kind}TilesAVX512"
MAXT = 12


def isum(t):
    return f"Z{6 + t}"


def acc(t):
    return f"Z{18 + t}"


def inp(t, off):
    """Address of byte off of input t's current block."""
    base = "R10" if t < 6 else "DI"
    idx = ["", "(R11*1)", "(R11*2)", "(R12*1)", "(R11*4)", "(R13*1)"][t % 6]
    return f"{off}({base}){idx}"


def prologue(kind):
    """Unpacks the row's scales of the current block into Z2-Z5 (and Q4_K's
    doubled minimums into the scratch)."""
    for p in range({'q2': 2, 'q3': 2, 'q4': 3, 'q5': 3, 'q6': 4, 'iq4_xs': 3}[kind]):
        w(f"\tPREFETCHT0 {PF + 64 * p}(SI)(BX*1)")
    if kind == 'iq4_xs':
        # Group g's scale ls - 32: bits 4(g%2).. of scales_l[g/2] and
        # 2g..2g+1 of scales_h at 4-5, in dword g of Y6, then in both
        # 16-bit halves of it; chunk c's register spreads groups 2c (lanes
        # 0-7) and 2c+1 (8-15), as VPDPWSSD's multiplier.
        w("\tVPBROADCASTD 4(SI)(BX*1), Y6")
        w(f"\tVPSRLVD ·kqConst+{IQSL}(SB), Y6, Y6")
        w("\tVPSLLD $28, Y6, Y6")
        w("\tVPSRLD $28, Y6, Y6")
        w("\tVPBROADCASTD 2(SI)(BX*1), Y7")
        w(f"\tVPSRLVD ·kqConst+{IQSH}(SB), Y7, Y7")
        w("\tVPSLLD $30, Y7, Y7")
        w("\tVPSRLD $26, Y7, Y7")
        w("\tVPOR Y7, Y6, Y6")
        w(f"\tVPSUBD ·kqConst+{IQ32}(SB), Y6, Y6")
        w("\tVPSLLD $16, Y6, Y7")
        w("\tVPSLLD $16, Y6, Y6")
        w("\tVPSRLD $16, Y6, Y6")
        w("\tVPOR Y7, Y6, Y6")
        for c in range(4):
            w(f"\tVMOVDQU64 ·kqConst+{IQIDX + 64 * c}(SB), Z7")
            w(f"\tVPERMD Z6, Z7, Z{2 + c}")
        return
    if kind == 'q2':
        # Scales (low nibbles) widened into Z6 for the spreads below, the
        # minimums (high nibbles) widened into the scratch.
        w("\tVMOVDQU (SI)(BX*1), X6")
        w("\tVPSRLW $4, X6, X7")
        w(f"\tVPAND ·kqConst+{K4 + 16}(SB), X7, X7")
        w("\tVPMOVZXBW X7, Y7")
        w("\tVMOVDQU Y7, (R9)")
        w(f"\tVPAND ·kqConst+{K4 + 16}(SB), X6, X6")
        w("\tVPMOVZXBW X6, Y6")
    if kind in ('q4', 'q5'):
        # get_scale_min_k4 on 32-bit lanes: X6 bytes 0-7 sc, 8-15 m.
        w("\tVMOVDQU 4(SI)(BX*1), X6")
        w("\tVPSRLD $6, X6, X7")
        w(f"\tVPAND ·kqConst+{K4 + 32}(SB), X7, X7")
        w("\tVPSLLD $4, X7, X7")
        w("\tVPSHUFD $0xAA, X6, X8")
        w(f"\tVPSRLVD ·kqConst+{K4 + 48}(SB), X8, X8")
        w(f"\tVPAND ·kqConst+{K4 + 16}(SB), X8, X8")
        w("\tVPOR X7, X8, X8")
        w(f"\tVPAND ·kqConst+{K4}(SB), X6, X6")
        w("\tVPUNPCKLDQ X8, X6, X6")
        w("\tVPMOVZXBW X6, Y6")
        w("\tVSHUFI32X4 $0x55, Z6, Z6, Z7")
        w(f"\tVPSHUFB ·kqConst+{MINS4}(SB), Y7, Y7")
        w("\tVMOVDQU Y7, (R9)")
        w("\tVSHUFI32X4 $0x00, Z6, Z6, Z7")
        for c in range(4):
            w(f"\tVPSHUFB ·kqConst+{SC4 + 64 * c}(SB), Z7, Z{2 + c}")
        return
    if kind == 'q3':
        # q3KScales: the low nibbles of bytes 0-7 (scales 0-7) and their
        # high nibbles (8-15), each ORed with 2 bits of bytes 8-11 moved
        # to bits 4-5, minus 32, widened to 16 bits.
        w("\tVMOVQ 96(SI)(BX*1), X6")
        w("\tVPUNPCKLQDQ X6, X6, X6")
        w(f"\tVPSRLVQ ·kqConst+{SH3Q}(SB), X6, X6")
        w(f"\tVPAND ·kqConst+{K4 + 16}(SB), X6, X6")
        w("\tVPBROADCASTD 104(SI)(BX*1), X7")
        w(f"\tVPSRLVD ·kqConst+{SH3D}(SB), X7, X7")
        w(f"\tVPAND ·kqConst+{K4 + 32}(SB), X7, X7")
        w("\tVPSLLD $4, X7, X7")
        w("\tVPOR X7, X6, X6")
        w(f"\tVPSUBB ·kqConst+{B20}(SB), X6, X6")
        w("\tVPMOVSXBW X6, Y6")
        w(f"\tVPMULLW ·kqConst+{NEG4}(SB), Y6, Y1")
    elif kind == 'q6':
        w("\tVPMOVSXBW 192(SI)(BX*1), Y6")
        w(f"\tVPMULLW ·kqConst+{NEG32}(SB), Y6, Y1")
    w("\tVSHUFI32X4 $0x00, Z6, Z6, Z7")
    w("\tVSHUFI32X4 $0x55, Z6, Z6, Z8")
    for c, (tab, ctl) in enumerate((("Z7", SC6A), ("Z7", SC6B), ("Z8", SC6A), ("Z8", SC6B))):
        w(f"\tVPSHUFB ·kqConst+{ctl}(SB), {tab}, Z{2 + c}")


def weights(kind, c):
    """Loads chunk c of the row's weights into Z0 as unsigned bytes."""
    if kind == 'iq4_xs':
        # Groups 2c and 2c+1 (qs[32c:32c+32]): nibbles in element order,
        # then their levels (the table in Z1, which is free until the
        # inputs' products), as magnitudes with the signs in K1.
        w(f"\tVMOVDQU {8 + 32 * c}(SI)(BX*1), Y0")
        w("\tVPSRLW $4, Y0, Y1")
        w("\tVPANDD Z31, Z0, Z0")
        w("\tVPANDD Z31, Z1, Z1")
        w("\tVINSERTI64X4 $1, Y1, Z0, Z0")
        w("\tVSHUFI64X2 $0xD8, Z0, Z0, Z0")
        w(f"\tVBROADCASTI32X4 ·kqConst+{LEVELS}(SB), Z1")
        w("\tVPSHUFB Z0, Z1, Z0")
        w("\tVPMOVB2M Z0, K1")
        w("\tVPABSB Z0, Z0")
        return
    if kind in ('q4', 'q5'):
        w(f"\tVBROADCASTI64X4 {(16 if kind == 'q4' else 48) + 32 * c}(SI)(BX*1), Z0")
        w("\tVPSRLVW Z30, Z0, Z0")
        w("\tVPANDD Z31, Z0, Z0")
        if kind == 'q5':
            # The fifth bit: bit 2c (low half) or 2c+1 (high half) of qh[l].
            w("\tVBROADCASTI64X4 16(SI)(BX*1), Z1")
            w(f"\tVPSRLVW ·kqConst+{CNT5 + 64 * c}(SB), Z1, Z1")
            w("\tVPSLLW $4, Z1, Z1")
            w(f"\tVPTERNLOGD $0xF8, ·kqConst+{B10}(SB), Z1, Z0")
        return
    if kind in ('q2', 'q3'):
        # Bits 2i..2i+1 of qs[32h+l] for pass i = 2(c%2) (low half) and
        # i+1 (high half), and (Q3_K) bit 4h+i of hmask[l] moved to bit 2.
        h, p = c // 2, c % 2
        w(f"\tVBROADCASTI64X4 {(32 if kind == 'q3' else 16) + 32 * h}(SI)(BX*1), Z0")
        w(f"\tVPSRLVW ·kqConst+{CNT3Q + 64 * p}(SB), Z0, Z0")
        w(f"\tVPANDD ·kqConst+{B03}(SB), Z0, Z0")
        if kind == 'q2':
            return
        w("\tVBROADCASTI64X4 (SI)(BX*1), Z1")
        w(f"\tVPSRLVW ·kqConst+{CNT3H + 64 * c}(SB), Z1, Z1")
        w("\tVPSLLW $2, Z1, Z1")
        w(f"\tVPTERNLOGD $0xF8, ·kqConst+{B04}(SB), Z1, Z0")
        return
    n, p = c // 2, c % 2
    w(f"\tVMOVDQU64 {64 * n}(SI)(BX*1), Z0")
    if p == 1:
        w("\tVPSRLW $4, Z0, Z0")
    w("\tVPANDD Z31, Z0, Z0")
    w(f"\tVBROADCASTI64X4 {128 + 32 * n}(SI)(BX*1), Z1")
    if p == 0:
        w(f"\tVPSLLVW ·kqConst+{CNT6A}(SB), Z1, Z1")
    else:
        w(f"\tVPSRLVW ·kqConst+{CNT6B}(SB), Z1, Z1")
    w(f"\tVPTERNLOGD $0xF8, ·kqConst+{B30}(SB), Z1, Z0")


def block(kind, T):
    """One block of 256 weights of the row for T inputs."""
    prologue(kind)
    if kind in ('q3', 'q6'):
        # I starts at -32 (Q3_K: -4) * (sc . bsums); Y1 holds -32 * sc.
        for t in range(T):
            w(f"\tVPMADDWD {inp(t, 256)}, Y1, {isum(t).replace('Z', 'Y')}")
    for c in range(4):
        weights(kind, c)
        if kind == 'iq4_xs':
            # q with the sign of its weight (Z30 is zero), so VPMADDUBSW of
            # |level| (at most 127) with it cannot saturate.
            for t in range(T):
                w(f"\tVMOVDQU64 {inp(t, 64 * c)}, Z1")
                w("\tVPSUBB Z1, Z30, K1, Z1")
                w("\tVPMADDUBSW Z1, Z0, Z1")
                op = "VPMADDWD" if c == 0 else "VPDPWSSD"
                w(f"\t{op} Z{2 + c}, Z1, {isum(t)}")
            continue
        for t in range(T):
            w(f"\tVPMADDUBSW {inp(t, 64 * c)}, Z0, Z1")
            op = "VPMADDWD" if kind in ('q2', 'q4', 'q5') and c == 0 else "VPDPWSSD"
            w(f"\t{op} Z{2 + c}, Z1, {isum(t)}")
    if kind in ('q2', 'q4', 'q5'):
        # Z1 = d, Z2 = dmin (broadcast), Y3 the (Q4_K, Q5_K: doubled)
        # minimums.
        w(f"\tVMOVD {80 if kind == 'q2' else 0}(SI)(BX*1), X0")
        w("\tVCVTPH2PS X0, X0")
        w("\tVBROADCASTSS X0, Z1")
        w("\tVPSHUFD $0x55, X0, X0")
        w("\tVBROADCASTSS X0, Z2")
        w("\tVMOVDQU (R9), Y3")
        for t in range(T):
            I = isum(t)
            w(f"\tVPMADDWD {inp(t, 256)}, Y3, Y4")
            w("\tVCVTDQ2PS Z4, Z4")
            w(f"\tVCVTDQ2PS {I}, {I}")
            w(f"\tVMULPS Z1, {I}, {I}")
            w(f"\tVFNMADD231PS Z2, Z4, {I}")
            w(f"\tVFMADD231PS.BCST {inp(t, 288)}, {I}, {acc(t)}")
        return
    w(f"\tVPBROADCASTW {dict(q3=108, q6=208, iq4_xs=0)[kind]}(SI)(BX*1), X0")
    w("\tVCVTPH2PS X0, X0")
    w("\tVBROADCASTSS X0, Z1")
    for t in range(T):
        I = isum(t)
        w(f"\tVCVTDQ2PS {I}, {I}")
        w(f"\tVMULPS Z1, {I}, {I}")
        w(f"\tVFMADD231PS.BCST {inp(t, 288)}, {I}, {acc(t)}")


def setup_consts(kind):
    w(f"\tVMOVDQU64 ·kqConst+{B0F}(SB), Z31")
    if kind == 'iq4_xs':
        w("\tVPXORD Z30, Z30, Z30")
    if kind in ('q4', 'q5'):
        w(f"\tVMOVDQU64 ·kqConst+{SHIFT4}(SB), Z30")
    w("\tLEAQ 63(SP), R9")
    w("\tANDQ $-64, R9")


def advance(kind, T):
    w(f"\tADDQ ${UNIT[kind]}, BX")
    w("\tADDQ $320, R10")
    if T > 6:
        w("\tADDQ $320, DI")


def reduce(z, dst):
    """Stores reduceLanes of accumulator z at dst: the second eight onto
    the first, the upper four onto the lower four, then pairs."""
    w(f"\tVEXTRACTF32X8 $1, {z}, Y0")
    w(f"\tVADDPS Y0, {z.replace('Z', 'Y')}, Y0")
    w("\tVEXTRACTF128 $1, Y0, X1")
    w("\tVADDPS X1, X0, X0")
    w("\tVHADDPS X0, X0, X0")
    w("\tVHADDPS X0, X0, X0")
    w(f"\tMOVSS X0, {dst}")


def tile(kind, T):
    name = tilename(kind, T)
    lbl = name.lower()
    w(f"// func {name}(w []byte, a []byte, lda int, nsb int, acc *[192]float32, zero bool, out []float32, ldo int)")
    w(f"TEXT ·{name}(SB), $96-112")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ a_base+24(FP), R10")
    w("\tMOVQ lda+48(FP), R11")
    w("\tLEAQ (R11)(R11*2), R12")
    w("\tLEAQ (R11)(R11*4), R13")
    if T > 6:
        w("\tLEAQ (R10)(R12*2), DI")
    w("\tMOVQ nsb+56(FP), CX")
    w("\tMOVQ acc+64(FP), DX")
    w("\tMOVBLZX zero+72(FP), BX")
    w("\tTESTQ BX, BX")
    w(f"\tJNE {lbl}zero")
    for t in range(T):
        w(f"\tVMOVUPS {t * 64}(DX), {acc(t)}")
    w(f"\tJMP {lbl}accs")
    w(f"{lbl}zero:")
    for t in range(T):
        w(f"\tVPXORD {acc(t)}, {acc(t)}, {acc(t)}")
    w(f"{lbl}accs:")
    setup_consts(kind)
    w("\tXORQ BX, BX")
    w("\tTESTQ CX, CX")
    w(f"\tJEQ {lbl}done")
    w(f"{lbl}loop:")
    block(kind, T)
    advance(kind, T)
    w("\tDECQ CX")
    w(f"\tJNZ {lbl}loop")
    w(f"{lbl}done:")
    w("\tMOVQ out_base+80(FP), R8")
    w("\tTESTQ R8, R8")
    w(f"\tJNE {lbl}out")
    w("\tMOVQ acc+64(FP), DX")
    for t in range(T):
        w(f"\tVMOVUPS {acc(t)}, {t * 64}(DX)")
    w("\tVZEROUPPER")
    w("\tRET")
    w(f"{lbl}out:")
    w("\tMOVQ ldo+104(FP), DX")
    w("\tSHLQ $2, DX")
    for t in range(T):
        reduce(acc(t), "(R8)")
        if t < T - 1:
            w("\tADDQ DX, R8")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")


def rows(kind):
    name = rowsname(kind)
    lbl = name.lower()
    w(f"// func {name}(w []byte, ldw int, a []byte, units int, nrows int, out []float32)")
    w(f"TEXT ·{name}(SB), $96-96")
    w("\tMOVQ w_base+0(FP), SI")
    w("\tMOVQ out_base+72(FP), R8")
    w("\tMOVQ nrows+64(FP), DX")
    setup_consts(kind)
    w("\tTESTQ DX, DX")
    w(f"\tJEQ {lbl}end")
    w(f"{lbl}row:")
    w(f"\tVPXORD {acc(0)}, {acc(0)}, {acc(0)}")
    w("\tMOVQ a_base+32(FP), R10")
    w("\tMOVQ units+56(FP), CX")
    w("\tXORQ BX, BX")
    w(f"{lbl}loop:")
    block(kind, 1)
    advance(kind, 1)
    w("\tDECQ CX")
    w(f"\tJNZ {lbl}loop")
    reduce(acc(0), "(R8)")
    w("\tADDQ $4, R8")
    w("\tADDQ ldw+24(FP), SI")
    w("\tDECQ DX")
    w(f"\tJNZ {lbl}row")
    w(f"{lbl}end:")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")


for kind in KINDS:
    for T in range(1, MAXT + 1):
        tile(kind, T)
    rows(kind)
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kquant_amd64.s"), "w").write("\n".join(out) + "\n")

# The Go declarations of the kernels and their tables by T.
go = ["// Code generated by blocks/asmgen/kquant.py; DO NOT EDIT.", "",
      "//go:build amd64 && !purego", "", "package blocks", ""]
for kind in KINDS:
    for T in range(1, MAXT + 1):
        go.append("//go:noescape")
        go.append(f"func {tilename(kind, T)}(w []byte, a []byte, lda int, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int)")
        go.append("")
    go.append("//go:noescape")
    go.append(f"func {rowsname(kind)}(w []byte, ldw int, a []byte, units int, nrows int, out []float32)")
    go.append("")
for kind in KINDS:
    label = f"{kind.upper()}_K" if kind[0] == 'q' else kind.upper()
    go.append(f"// {tablename(kind)}[T] is the kernel of one {label} row and T inputs.")
    go.append(f"var {tablename(kind)} = [{MAXT + 1}]func(w []byte, a []byte, lda int, nsb int, acc *[3 * 4 * q8Lanes]float32, zero bool, out []float32, ldo int){{")
    go.append("\tnil,")
    for T in range(1, MAXT + 1):
        go.append(f"\t{tilename(kind, T)},")
    go.append("}")
    go.append("")
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kquant_amd64.go"), "w").write("\n".join(go))
