// kernels.cu: the device kernels of swarm's CUDA block engine.
//
// This file is compiled at run time by NVRTC (to PTX, then loaded through
// the driver API) with the options --fmad=false and --std=c++14, so plain
// a*b+c is never contracted into a fused multiply-add and the arithmetic
// follows the CPU reference in package blocks step by step where it can.
// It includes no headers (NVRTC 11.x has no cuda_fp16.h built in).
//
// Conventions:
//   - All matrices are row-major: element (r, c) of an [R, C] matrix is at
//     r*C + c.
//   - "half" is unsigned short holding the bits of an IEEE binary16 value;
//     f16() / f32() below convert with the PTX cvt instructions (f32 -> f16
//     rounds to nearest even).
//   - Every kernel is extern "C" (unmangled names), every integer parameter
//     is a 32-bit int, every pointer a 64-bit device pointer; the Go side
//     passes the arguments positionally in the order written here.
//   - Element-wise kernels use grid-stride loops with blockDim.x = 256, so
//     any grid size is correct; the Go side launches ceil(total/256) blocks
//     (capped).
//   - Reductions use shared-memory trees (blockDim.x a power of two, at
//     most 256), never float atomics.

// ---------------------------------------------------------------------------
// Helpers

#ifndef SWARM_HOST_EMULATION
// f16 rounds x to the nearest binary16 value and returns its bits.
__device__ __forceinline__ unsigned short f16(float x)
{
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}

// f32 widens the binary16 bits h to float (exact).
__device__ __forceinline__ float f32(unsigned short h)
{
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}
#else
// The host emulation of the tests (testdata/host_shim.h) converts in
// software, with the same rounding.
__device__ __forceinline__ unsigned short f16(float x) { return host_f16(x); }
__device__ __forceinline__ float f32(unsigned short h) { return host_f32(h); }
#endif

// sw_exp is the exponential used by softmax and SwiGLU, computed in double
// and rounded as the CPU's float32(math.Exp(float64(x))) is (expf could be
// 2 ulp away). Both are correctly rounded or nearly so, so they agree on
// almost every input.
__device__ __forceinline__ float sw_exp(float x)
{
    return (float)exp((double)x);
}

// block_sum returns, to every thread of the block, the sum of v over the
// block's threads. buf is shared memory of at least blockDim.x floats;
// blockDim.x must be a power of two. Contains barriers: every thread of the
// block must call it.
__device__ __forceinline__ float block_sum(float v, float* buf)
{
    const int tid = threadIdx.x;
    buf[tid] = v;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s) {
            buf[tid] = buf[tid] + buf[tid + s];
        }
        __syncthreads();
    }
    const float r = buf[0];
    __syncthreads(); // buf may be reused right after
    return r;
}

// block_max is block_sum with max instead of +.
__device__ __forceinline__ float block_max(float v, float* buf)
{
    const int tid = threadIdx.x;
    buf[tid] = v;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s) {
            buf[tid] = fmaxf(buf[tid], buf[tid + s]);
        }
        __syncthreads();
    }
    const float r = buf[0];
    __syncthreads();
    return r;
}

#define SW_MAX_THREADS 256 // largest blockDim.x of the reducing kernels
#define SW_MAX_HEAD_DIM 256 // largest headDim attention supports

// ---------------------------------------------------------------------------
// 1. rmsnorm
//
// RMS-normalizes each row of x [rows, cols] and scales it by w [cols]:
//   ss = sum_i x[i]^2; ss = ss/cols + eps; s = 1/sqrtf(ss);
//   y[i] = w[i] * (s * x[i]).
// Writes y to out [rows, cols] (f32) if out != NULL and to outh [rows, cols]
// (half) if outh != NULL. out may equal x (in place).
// Also used for per-head q/k norms: rows = tokens*heads, cols = headDim
// (cols may be below blockDim.x).
// Launch: grid.x = rows, blockDim.x = 256 (power of two).
// Matches blocks/block.go rmsnorm (the sum of squares is a tree here, a
// sequential sum there).
extern "C" __global__ void rmsnorm(float* out, unsigned short* outh, const float* x,
                                   const float* w, int cols, float eps)
{
    __shared__ float buf[SW_MAX_THREADS];
    const size_t base = (size_t)blockIdx.x * (size_t)cols;
    const float* xr = x + base;

    float ss = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float v = xr[i];
        ss += v * v;
    }
    // block_sum's barriers also guarantee every read of x above is done
    // before any thread writes out (which may alias x) below.
    ss = block_sum(ss, buf);
    ss = ss / (float)cols;
    ss = ss + eps;
    const float s = 1.0f / sqrtf(ss);

    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float y = w[i] * (s * xr[i]);
        if (out != 0) {
            out[base + i] = y;
        }
        if (outh != 0) {
            outh[base + i] = f16(y);
        }
    }
}

// ---------------------------------------------------------------------------
// 2. add_bias
//
// x [total/cols, cols] += b [cols] broadcast over rows: x[i] += b[i % cols].
// Launch: blockDim.x = 256, grid.x = ceil(total/256) (grid-stride loop).
// Matches blocks/block.go addRows (q/k/v biases, e.g. Qwen2).
extern "C" __global__ void add_bias(float* x, const float* b, int cols, int total)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        x[i] = x[i] + b[(int)(i % cols)];
    }
}

// ---------------------------------------------------------------------------
// 3. rope
//
// Rotates adjacent pairs (2i, 2i+1) of every head of x [nRows, nHeads*headDim]
// in place by the angles of row t: cosT, sinT [nRows, headDim/2].
//   v0' = v0*c - v1*s; v1' = v0*s + v1*c.
// One thread per (t, h, i), i < headDim/2.
// Launch: blockDim.x = 256, grid-stride over nRows*nHeads*(headDim/2).
// Matches blocks/rope.go (*rope).apply.
extern "C" __global__ void rope(float* x, const float* cosT, const float* sinT,
                                int nHeads, int headDim, int nRows)
{
    const int half = headDim / 2;
    const long long total = (long long)nRows * nHeads * half;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const int i = (int)(idx % half);
        const long long th = idx / half; // t*nHeads + h
        const long long t = th / nHeads;
        const float c = cosT[t * half + i];
        const float s = sinT[t * half + i];
        float* v = x + th * headDim + 2 * i;
        const float v0 = v[0];
        const float v1 = v[1];
        v[0] = v0 * c - v1 * s;
        v[1] = v0 * s + v1 * c;
    }
}

// ---------------------------------------------------------------------------
// 4. store_kv
//
// Stores one session's n new keys and values k, v [n, kvDim] (f32) into its
// half caches kc, vc (rows of kvDim halves). Token t goes to cache row
// r = ring > 0 ? (pos+t) % ring : pos+t:
//   kc[r*kvDim + i] = f16(k[t*kvDim + i]), likewise vc from v.
// When ring > 0 and n > ring, only the last ring tokens are stored (as the
// CPU does): earlier ones would share rows with them and race.
// Launch: blockDim.x = 256, grid-stride over n*kvDim.
// Matches blocks/kvcache.go (*kvCache).store / putRow with an f16 cache
// (f32ToF16 in blocks/matrix.go: round to nearest even).
extern "C" __global__ void store_kv(unsigned short* kc, unsigned short* vc, const float* k,
                                    const float* v, int kvDim, int pos, int ring, int n)
{
    const long long total = (long long)n * kvDim;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const long long t = idx / kvDim;
        const long long i = idx % kvDim;
        if (ring > 0 && t < (long long)n - ring) {
            continue; // overwritten by token t+ring of this same call
        }
        long long r = (long long)pos + t;
        if (ring > 0) {
            r = r % ring;
        }
        const size_t dst = (size_t)r * (size_t)kvDim + (size_t)i;
        kc[dst] = f16(k[idx]);
        vc[dst] = f16(v[idx]);
    }
}

// ---------------------------------------------------------------------------
// 5. attention
//
// Causal grouped-query attention of one session's n query rows (positions
// pos..pos+n-1) over its half KV cache, which already holds every position
// 0..pos+n-1 still in the ring (this call's included).
//   q, out    [n, nHeads*headDim] f32
//   kc, vc    cache rows of kvDim = nKVHeads*headDim halves; position j is
//             in row rj = ring > 0 ? j % ring : j
//   scores    scratch, row (t*nHeads + h) at (t*nHeads + h)*scoreStride,
//             at least p+1-lo floats per row
// Block b handles query row t = b / nHeads, head h = b % nHeads at position
// p = pos + t, over keys j = lo..p with lo = window > 0 ? max(0, p-window+1)
// : 0, KV head kvh = h / (nHeads/nKVHeads):
//   phase 1: sc[j] = (sum_d q[d]*k_j[d], d ascending) / scale
//   phase 2: softmax over sc (max, exp(x - max), sum, divide)
//   phase 3: out[d] = sum_j sc[j]*v_j[d], j ascending
// headDim <= 256.
// Launch: grid.x = n*nHeads, blockDim.x = 128 (power of two, <= 256).
// Matches blocks/block.go attention / keyScores / softmax / axpy.
extern "C" __global__ void attention(float* out, const float* q, const unsigned short* kc,
                                     const unsigned short* vc, float* scores, int nHeads,
                                     int nKVHeads, int headDim, int pos, int n, int window,
                                     int ring, float scale, int scoreStride)
{
    __shared__ float qs[SW_MAX_HEAD_DIM];
    __shared__ float buf[SW_MAX_THREADS];

    const int tid = threadIdx.x;
    const int b = blockIdx.x;
    if (b >= n * nHeads) {
        return; // whole block: no barrier is skipped by only some threads
    }
    const int t = b / nHeads;
    const int h = b % nHeads;
    const int p = pos + t;
    const int lo = window > 0 ? max(0, p - window + 1) : 0;
    const int cnt = p + 1 - lo;
    const int kvh = h / (nHeads / nKVHeads);
    const size_t kvDim = (size_t)nKVHeads * (size_t)headDim;
    const size_t koff = (size_t)kvh * (size_t)headDim;
    const size_t row = (size_t)t * nHeads + h;

    const float* qh = q + row * headDim;
    for (int d = tid; d < headDim; d += blockDim.x) {
        qs[d] = qh[d];
    }
    __syncthreads();

    float* sc = scores + row * (size_t)scoreStride;

    // Phase 1: scores.
    float m = __int_as_float(0xff800000); // -Inf
    for (int jj = tid; jj < cnt; jj += blockDim.x) {
        const int j = lo + jj;
        const size_t rj = ring > 0 ? (size_t)(j % ring) : (size_t)j;
        const unsigned short* kj = kc + rj * kvDim + koff;
        float dot = 0.0f;
        for (int d = 0; d < headDim; d++) {
            dot += qs[d] * f32(kj[d]);
        }
        const float s = dot / scale;
        sc[jj] = s;
        m = fmaxf(m, s);
    }

    // Phase 2: softmax. Each thread rereads only the scores it wrote, so
    // the reductions' barriers are the only ones needed here.
    m = block_max(m, buf);
    float sum = 0.0f;
    for (int jj = tid; jj < cnt; jj += blockDim.x) {
        const float e = sw_exp(sc[jj] - m);
        sc[jj] = e;
        sum += e;
    }
    sum = block_sum(sum, buf);
    for (int jj = tid; jj < cnt; jj += blockDim.x) {
        sc[jj] = sc[jj] / sum;
    }
    __syncthreads(); // phase 3 reads every thread's scores

    // Phase 3: weighted sum of values.
    float* oh = out + row * headDim;
    for (int d = tid; d < headDim; d += blockDim.x) {
        float acc = 0.0f;
        for (int jj = 0; jj < cnt; jj++) {
            const int j = lo + jj;
            const size_t rj = ring > 0 ? (size_t)(j % ring) : (size_t)j;
            acc += sc[jj] * f32(vc[rj * kvDim + koff + d]);
        }
        oh[d] = acc;
    }
}

// ---------------------------------------------------------------------------
// 6. glu
//
// Gated activation of the feed-forward block, element-wise over g, u [total]
// (f32; g = x·W1ᵀ, u = x·W3ᵀ), result as half in outh [total]:
//   act == 0 (SwiGLU): y = g * (1/(1 + exp(-g))); y = y * u
//   act == 1 (GeGLU, tanh GELU in double):
//     y = (float)(0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x*x*x)))),
//     x = (double)g; y = y * u
// Launch: blockDim.x = 256, grid-stride over total.
// Matches blocks/block.go mulGLU / geluTanh.
extern "C" __global__ void glu(unsigned short* outh, const float* g, const float* u, int total,
                               int act)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        float y;
        if (act == 1) {
            const double x = (double)g[i];
            const double k = 0.7978845608028654; // math.Sqrt(2/math.Pi)
            y = (float)(0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x))));
        } else {
            const float gv = g[i];
            y = gv * (1.0f / (1.0f + sw_exp(-gv)));
        }
        y = y * u[i];
        outh[i] = f16(y);
    }
}

// ---------------------------------------------------------------------------
// 7. to_f16
//
// o[i] = f16(x[i]) for i < n. Launch: blockDim.x = 256, grid-stride.
// Matches blocks/matrix.go f32ToF16 (round to nearest even).
extern "C" __global__ void to_f16(unsigned short* o, const float* x, int n)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        o[i] = f16(x[i]);
    }
}

// ---------------------------------------------------------------------------
// 8. add
//
// x[i] += y[i] for i < n (residual connection). Launch: blockDim.x = 256,
// grid-stride. Matches the residual additions of blocks/block.go.
extern "C" __global__ void add(float* x, const float* y, int n)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        x[i] = x[i] + y[i];
    }
}

// ---------------------------------------------------------------------------
// 9. f16_to_f32
//
// o[i] = f32(x[i]) for i < n (exact). Launch: blockDim.x = 256, grid-stride.
// Matches the f16 -> f32 widening of blocks (kernels.go cvtF16Go).
extern "C" __global__ void f16_to_f32(float* o, const unsigned short* x, int n)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        o[i] = f32(x[i]);
    }
}
