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
