// host_shim.h: lets the CUDA C of ../kernels.cu compile as C++ and run on
// the CPU, for blocks/cuda's tests on machines without a GPU
// (emulate_test.go). Each launch runs its blocks one after another; in
// kernels with barriers a block's threads are real threads meeting at a
// std::barrier in __syncthreads, and __shared__ arrays become function
// statics (one block at a time uses them). binary16 conversions go through GCC's _Float16
// (round to nearest even, as PTX cvt.rn.f16.f32). This checks the kernels'
// indexing and arithmetic, not their speed or anything GPU-specific.
#pragma once

#include <algorithm>
#include <barrier>
#include <cstring>
#include <math.h>

struct sw_dim3 {
    unsigned x, y, z;
};
extern thread_local sw_dim3 threadIdx, blockIdx;
extern sw_dim3 blockDim, gridDim;
extern std::barrier<>* sw_block_barrier;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

inline void __syncthreads() { sw_block_barrier->arrive_and_wait(); }

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
