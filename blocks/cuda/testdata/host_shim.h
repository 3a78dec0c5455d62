// host_shim.h: lets the CUDA C of ../kernels.cu compile as C++ and run on
// the CPU, for blocks/cuda's tests on machines without a GPU
// (emulate_test.go). Each launch runs its blocks one after another, on one
// OS thread: a block's CUDA threads are fibers (ucontext) that run in turn
// up to their next __syncthreads, so every thread of the block reaches a
// barrier before any passes it; __shared__ arrays become function statics
// (one block at a time uses them). binary16 conversions go through GCC's _Float16
// (round to nearest even, as PTX cvt.rn.f16.f32). This checks the kernels'
// indexing and arithmetic, not their speed or anything GPU-specific.
#pragma once

#include <algorithm>
#include <cstring>
#include <math.h>

struct sw_dim3 {
    unsigned x, y, z;
};
extern sw_dim3 threadIdx, blockIdx, blockDim, gridDim;

// sw_sync suspends the running CUDA thread until every thread of its block
// has reached the barrier (host_main.cc).
void sw_sync();

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __grid_constant__

inline void __syncthreads() { sw_sync(); }

// __shfl_xor_sync exchanges v with lane threadIdx.x ^ m through a slot per
// thread and two block-wide barriers: every thread of the block must call
// it at the same point (the kernels' butterflies are uniform).
inline float __shfl_xor_sync(unsigned, float v, int m)
{
    static float slot[1024];
    slot[threadIdx.x] = v;
    sw_sync();
    const float r = slot[threadIdx.x ^ (unsigned)m];
    sw_sync();
    return r;
}

inline float __int_as_float(int i)
{
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

using std::max;
using std::min;

inline unsigned short host_f16(float x)
{
    _Float16 h = (_Float16)x;
    unsigned short r;
    std::memcpy(&r, &h, sizeof r);
    return r;
}

inline float host_f32(unsigned short b)
{
    _Float16 h;
    std::memcpy(&h, &b, sizeof h);
    return (float)h;
}

// host_mma16816 is PTX mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// for the warp of the calling thread: each lane passes its fragments (the
// PTX ISA's layout: a0..a3 f16x2 of rows g, g+8 at k 2q, then 2q+8; b0, b1
// f16x2 of column g at k 2q, 2q+8; d rows g, g+8 at columns 2q, 2q+1, for
// lane 4g+q) through slots and two block-wide barriers, so every thread of
// the block must call it at the same point. Each element sums its 16
// products onto d with fmaf in k order (the hardware's order differs; the
// tests check the kernels against float64 and against themselves).
inline void host_mma16816(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    static unsigned A[1024][4], B[1024][2];
    const unsigned t = threadIdx.x;
    A[t][0] = a0;
    A[t][1] = a1;
    A[t][2] = a2;
    A[t][3] = a3;
    B[t][0] = b0;
    B[t][1] = b1;
    sw_sync();
    const unsigned base = t & ~31u, lane = t & 31u, g = lane >> 2, q = lane & 3u;
    auto half = [](unsigned reg, unsigned k) { return host_f32((unsigned short)((k & 1u) ? reg >> 16 : reg & 0xffffu)); };
    // a(r, k): row r (0..15), column k (0..15) of A; b(k, c) likewise of B.
    auto a = [&](unsigned r, unsigned k) { return half(A[base + 4 * (r & 7u) + ((k & 7u) >> 1)][(r >> 3) + 2 * (k >> 3)], k); };
    auto b = [&](unsigned k, unsigned c) { return half(B[base + 4 * c + ((k & 7u) >> 1)][k >> 3], k); };
    float out[4];
    for (unsigned i = 0; i < 4; i++) {
        const unsigned r = i < 2 ? g : g + 8, c = 2 * q + (i & 1u);
        float s = d[i];
        for (unsigned k = 0; k < 16; k++) {
            s = fmaf(a(r, k), b(k, c), s);
        }
        out[i] = s;
    }
    sw_sync();
    for (unsigned i = 0; i < 4; i++) {
        d[i] = out[i];
    }
}
