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

// sw_u4 holds 8 halves; load16 reads them from a 16-byte aligned address.
#ifndef SWARM_HOST_EMULATION
struct sw_u4 {
    unsigned int a, b, c, d;
};
__device__ __forceinline__ sw_u4 load16(const unsigned short* p)
{
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    sw_u4 r = {v.x, v.y, v.z, v.w};
    return r;
}
#else
struct sw_u4 {
    unsigned int a, b, c, d;
};
__device__ __forceinline__ sw_u4 load16(const unsigned short* p)
{
    sw_u4 r;
    std::memcpy(&r, p, sizeof r);
    return r;
}
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
#define SW_NORM_BATCH 8 // elements per thread rmsnorm loads at once

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
    const int bd = blockDim.x;

    // A thread's elements are i = threadIdx.x + bd*k, k ascending, taken
    // SW_NORM_BATCH at a time: all of a batch's loads are issued before any
    // of its arithmetic (and, below, before any of its stores, which the
    // compiler could not move them past: out may alias x). One block runs
    // a row, so without this each element waited for its own load from
    // memory in turn. The sums are the same, in the same order.
    float ss = 0.0f;
    for (int i0 = threadIdx.x; i0 < cols; i0 += SW_NORM_BATCH * bd) {
        float v[SW_NORM_BATCH];
#pragma unroll
        for (int u = 0; u < SW_NORM_BATCH; u++) {
            const int i = i0 + u * bd;
            v[u] = i < cols ? xr[i] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < SW_NORM_BATCH; u++) {
            if (i0 + u * bd < cols) {
                ss += v[u] * v[u];
            }
        }
    }
    // block_sum's barriers also guarantee every read of x above is done
    // before any thread writes out (which may alias x) below.
    ss = block_sum(ss, buf);
    ss = ss / (float)cols;
    ss = ss + eps;
    const float s = 1.0f / sqrtf(ss);

    for (int i0 = threadIdx.x; i0 < cols; i0 += SW_NORM_BATCH * bd) {
        float wv[SW_NORM_BATCH], xv[SW_NORM_BATCH];
#pragma unroll
        for (int u = 0; u < SW_NORM_BATCH; u++) {
            const int i = i0 + u * bd;
            wv[u] = i < cols ? w[i] : 0.0f;
            xv[u] = i < cols ? xr[i] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < SW_NORM_BATCH; u++) {
            const int i = i0 + u * bd;
            if (i < cols) {
                const float y = wv[u] * (s * xv[u]);
                if (out != 0) {
                    out[base + i] = y;
                }
                if (outh != 0) {
                    outh[base + i] = f16(y);
                }
            }
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
// The sessions of a pass: segment s holds rows off[s] .. off[s]+n[s]-1 of
// the pass's q, k, v (and of attention's out and scores), the positions
// pos[s] .. pos[s]+n[s]-1 of one session, whose half caches of this block
// are at kc[s], vc[s] (device pointers; rows of kvDim halves, a ring of
// ring[s] rows or 0 for a full cache). Segments are listed in row order,
// off[0] = 0, every row in exactly one; count <= SW_MAX_SEGS. Passed by
// value as a kernel parameter (__grid_constant__: read in place, not
// copied per thread). Layout shared with forward.go's segTable and, for the
// host emulation, testdata/host_main.cc.
#define SW_MAX_SEGS 64
struct sw_segs {
    unsigned long long kc[SW_MAX_SEGS];
    unsigned long long vc[SW_MAX_SEGS];
    int pos[SW_MAX_SEGS];
    int off[SW_MAX_SEGS];
    int n[SW_MAX_SEGS];
    int ring[SW_MAX_SEGS];
    int count;
};

// seg_of returns the segment that holds pass row t.
__device__ __forceinline__ int seg_of(const sw_segs& sg, long long t)
{
    int s = 0;
    while (s + 1 < sg.count && sg.off[s + 1] <= t) {
        s++;
    }
    return s;
}

// store_kv stores the pass's new keys and values k, v [rows, kvDim] (f32)
// into each row's session caches (segs). Row t of segment s, local token
// u = t - off[s], goes to cache row r = ring > 0 ? (pos+u) % ring : pos+u:
//   kc[r*kvDim + i] = f16(k[t*kvDim + i]), likewise vc from v.
// When ring > 0 and n > ring, only the segment's last ring tokens are
// stored (as the CPU does): earlier ones would share rows with them and
// race.
// Launch: blockDim.x = 256, grid-stride over rows*kvDim.
// Matches blocks/kvcache.go (*kvCache).store / putRow with an f16 cache
// (f32ToF16 in blocks/matrix.go: round to nearest even).
extern "C" __global__ void store_kv(const float* k, const float* v, int kvDim, int rows,
                                    const __grid_constant__ sw_segs segs)
{
    const long long total = (long long)rows * kvDim;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const long long t = idx / kvDim;
        const long long i = idx % kvDim;
        const int s = seg_of(segs, t);
        const long long u = t - segs.off[s];
        const int ring = segs.ring[s];
        if (ring > 0 && u < (long long)segs.n[s] - ring) {
            continue; // overwritten by token u+ring of this same segment
        }
        long long r = (long long)segs.pos[s] + u;
        if (ring > 0) {
            r = r % ring;
        }
        const size_t dst = (size_t)r * (size_t)kvDim + (size_t)i;
        ((unsigned short*)segs.kc[s])[dst] = f16(k[idx]);
        ((unsigned short*)segs.vc[s])[dst] = f16(v[idx]);
    }
}

// ---------------------------------------------------------------------------
// 5. attention
//
// Causal grouped-query attention of a pass's rows, each over its own
// session's half KV cache (segs, see store_kv), which already holds every
// position of the segment's session up to the row's own (this pass's
// included) that is still in the ring.
//   q, out    [rows, nHeads*headDim] f32
//   kc, vc    of row t's segment s: cache rows of kvDim =
//             nKVHeads*headDim halves; position j is in row
//             rj = ring[s] > 0 ? j % ring[s] : j
//   scores    scratch, row (t*nHeads + h) at (t*nHeads + h)*scoreStride,
//             at least p+1-lo floats per row
// Block b handles pass row t = b / nHeads, head h = b % nHeads at position
// p = pos[s] + t - off[s], over keys j = lo..p with lo = window > 0 ?
// max(0, p-window+1) : 0, KV head kvh = h / (nHeads/nKVHeads):
//   phase 1: sc[j] = (sum_d q[d]*k_j[d], d ascending) / scale
//   phase 2: softmax over sc (max, exp(x - max), sum, divide)
//   phase 3: out[d] = sum_j sc[j]*v_j[d]: each warp sums every
//            (blockDim.x/32)-th position in ascending order, then the
//            warps' sums are added in warp order
// A row's result depends only on its own q, position and session cache, so
// the sessions of a batch are attended in one launch with the same bits as
// one launch each. headDim <= 256. With outh != NULL the result goes to
// outh [rows, nHeads*headDim] as half (f16, the next product's input)
// instead of out.
// Launch: grid.x = rows*nHeads, blockDim.x = 256 (a power of two, 32 to
// 256).
// Matches blocks/block.go attention / keyScores / softmax / axpy, up to
// the order of phase 3's sums.
extern "C" __global__ void attention(float* out, const float* q, float* scores, int nHeads,
                                     int nKVHeads, int headDim, int rows, int window, float scale,
                                     int scoreStride, unsigned short* outh,
                                     const __grid_constant__ sw_segs segs)
{
    __shared__ float qs[SW_MAX_HEAD_DIM];
    __shared__ float buf[SW_MAX_THREADS];

    const int tid = threadIdx.x;
    const int b = blockIdx.x;
    if (b >= rows * nHeads) {
        return; // whole block: no barrier is skipped by only some threads
    }
    const int t = b / nHeads;
    const int h = b % nHeads;
    const int sg = seg_of(segs, t);
    const unsigned short* kc = (const unsigned short*)segs.kc[sg];
    const unsigned short* vc = (const unsigned short*)segs.vc[sg];
    const int ring = segs.ring[sg];
    const int p = segs.pos[sg] + t - segs.off[sg];
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
        if ((headDim & 7) == 0) {
            // The same sums in the same order, from 16-byte loads.
#pragma unroll 4
            for (int d = 0; d < headDim; d += 8) {
                const sw_u4 kv = load16(kj + d);
                const unsigned int ks[4] = {kv.a, kv.b, kv.c, kv.d};
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    dot += qs[d + 2 * i] * f32((unsigned short)(ks[i] & 0xffffu));
                    dot += qs[d + 2 * i + 1] * f32((unsigned short)(ks[i] >> 16));
                }
            }
        } else {
            for (int d = 0; d < headDim; d++) {
                dot += qs[d] * f32(kj[d]);
            }
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

    // Phase 3: weighted sum of values. Warp w sums the positions jj = w,
    // w + W, ... (W warps) for the dimensions d = lane + 32*i; the warps'
    // partial sums are then added in warp order (a fixed order: the result
    // does not depend on timing).
    __shared__ float part[SW_MAX_THREADS / 32][SW_MAX_HEAD_DIM];
    const int lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    float acc[SW_MAX_HEAD_DIM / 32];
#pragma unroll
    for (int i = 0; i < SW_MAX_HEAD_DIM / 32; i++) {
        acc[i] = 0.0f;
    }
#pragma unroll 4
    for (int jj = warp; jj < cnt; jj += nw) {
        const int j = lo + jj;
        const size_t rj = ring > 0 ? (size_t)(j % ring) : (size_t)j;
        const unsigned short* vj = vc + rj * kvDim + koff;
        const float w = sc[jj];
#pragma unroll
        for (int i = 0; i < SW_MAX_HEAD_DIM / 32; i++) {
            const int d = lane + 32 * i;
            if (d < headDim) {
                acc[i] += w * f32(vj[d]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < SW_MAX_HEAD_DIM / 32; i++) {
        const int d = lane + 32 * i;
        if (d < headDim) {
            part[warp][d] = acc[i];
        }
    }
    __syncthreads();
    float* oh = out + row * headDim;
    for (int d = tid; d < headDim; d += blockDim.x) {
        float r = part[0][d];
        for (int w = 1; w < nw; w++) {
            r += part[w][d];
        }
        if (outh != 0) {
            outh[row * headDim + d] = f16(r);
        } else {
            oh[d] = r;
        }
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
// glu_one is the gated activation of one element: act(g) * u (see glu).
__device__ __forceinline__ float glu_one(float gv, float uv, int act)
{
    float y;
    if (act == 1) {
        const double x = (double)gv;
        const double k = 0.7978845608028654; // math.Sqrt(2/math.Pi)
        y = (float)(0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x))));
    } else {
        y = gv * (1.0f / (1.0f + sw_exp(-gv)));
    }
    return y * uv;
}

extern "C" __global__ void glu(unsigned short* outh, const float* g, const float* u, int total,
                               int act)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        outh[i] = f16(glu_one(g[i], u[i], act));
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

// ---------------------------------------------------------------------------
// 10. matvec_1, matvec_4, matvec_16
//
// The engine's matrix products: out[c, r] = sum_k W[r, k] * x[c, k] for the
// n tokens c of a pass, W [rows, cols] half (a weight matrix, row-major),
// x [n, cols] half, sums in float32. Bound by reading W: each warp reads RW
// = 2 rows once for all the pass's tokens (a column tile of NC tokens at a
// time, the later tiles from cache), with 16-byte loads when cols % 8 == 0.
//
// A token's result depends only on its own x and W, never on n, NC, RW, the
// block size or the other tokens: lane l sums the elements
// k = 8*(l + 32*i) + j (i, then j ascending; or k = l + 32*i without
// 16-byte loads) with fmaf, then the 32 lane sums are combined by a fixed
// butterfly (__shfl_xor_sync 16, 8, 4, 2, 1). So a decode step, a batch and
// a prefill chunk give every token bit for bit the same values, and a
// replay reproduces them, whichever of these kernels runs the pass.
//
// Row units: a warp computes unit u = global warp index.
//   mode 0 (store): rows RW*u ... RW*u + RW-1 of the stacked matrices w0
//           [rows0], w1 [rows1], w2 [rows2] (rows1, rows2 may be 0), each
//           written to its own output: oK[c*rowsK + r] = sum.
//   mode 1 (add): rows RW*u ... of w0: o0[c*rows0 + r] += sum (residual).
//   mode 2 (glu): rows (RW/2)*u ... of w0 (gate) and of w1 (up), rows0 =
//           rows1: outh[c*rows0 + r] = f16(glu_one(gate, up, act)).
// Launch: blockDim.x = 32 * warps (warps 1..8), grid.x = ceil(units/warps),
// units = ceil((rows0+rows1+rows2)/RW) in modes 0 and 1, ceil(rows0/(RW/2))
// in mode 2.
// Matches blocks/matrix.go's products up to the order of the sums (the CPU
// sums in its own blocked order), which the parity bounds allow for.

// sw_f4 holds 4 floats; shared-memory tiles of them are read 16 bytes a lane.
#ifndef SWARM_HOST_EMULATION
typedef float4 sw_f4;
#else
struct sw_f4 {
    float x, y, z, w;
};
#endif

// dot8 adds the products of the 8 halves of w and x to acc, in order.
__device__ __forceinline__ float dot8(float acc, sw_u4 w, sw_u4 x)
{
    const unsigned int ws[4] = {w.a, w.b, w.c, w.d};
    const unsigned int xs[4] = {x.a, x.b, x.c, x.d};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        acc = fmaf(f32((unsigned short)(ws[i] & 0xffffu)), f32((unsigned short)(xs[i] & 0xffffu)), acc);
        acc = fmaf(f32((unsigned short)(ws[i] >> 16)), f32((unsigned short)(xs[i] >> 16)), acc);
    }
    return acc;
}

// dot8f is dot8 with x already widened: lo holds x's halves 0..3, hi 4..7.
// f32 is exact, so the products and sums are dot8's bit for bit.
__device__ __forceinline__ float dot8f(float acc, sw_u4 w, sw_f4 lo, sw_f4 hi)
{
    acc = fmaf(f32((unsigned short)(w.a & 0xffffu)), lo.x, acc);
    acc = fmaf(f32((unsigned short)(w.a >> 16)), lo.y, acc);
    acc = fmaf(f32((unsigned short)(w.b & 0xffffu)), lo.z, acc);
    acc = fmaf(f32((unsigned short)(w.b >> 16)), lo.w, acc);
    acc = fmaf(f32((unsigned short)(w.c & 0xffffu)), hi.x, acc);
    acc = fmaf(f32((unsigned short)(w.c >> 16)), hi.y, acc);
    acc = fmaf(f32((unsigned short)(w.d & 0xffffu)), hi.z, acc);
    acc = fmaf(f32((unsigned short)(w.d >> 16)), hi.w, acc);
    return acc;
}

// widen4 returns the 4 halves of the words a, b as floats.
__device__ __forceinline__ sw_f4 widen4(unsigned int a, unsigned int b)
{
    sw_f4 r;
    r.x = f32((unsigned short)(a & 0xffffu));
    r.y = f32((unsigned short)(a >> 16));
    r.z = f32((unsigned short)(b & 0xffffu));
    r.w = f32((unsigned short)(b >> 16));
    return r;
}

// warp_sum combines the 32 lanes' v by the fixed butterfly.
__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) {
        v = v + __shfl_xor_sync(0xffffffffu, v, m);
    }
    return v;
}

// mv_row resolves row r of a product's rows to its matrix row, output and
// output row count: in modes 0 and 1 r counts through the stacked matrices
// w0, w1, w2; in mode 2 it is a row of the gate w0, or of up w1 when up.
// Past the end valid is false and the row is row 0 of w0 (read, never
// written), so every lane still takes part in the warp's collective steps.
__device__ __forceinline__ void mv_row(long long r, bool up, int mode, const unsigned short* w0, float* o0,
                                       int rows0, const unsigned short* w1, float* o1, int rows1,
                                       const unsigned short* w2, float* o2, int rows2, int cols,
                                       const unsigned short** wr, float** orow, int* ostride, long long* ridx,
                                       bool* valid)
{
    const unsigned short* w = w0;
    float* o = o0;
    int rows = rows0;
    if (mode == 2) {
        if (up) {
            w = w1;
            o = o1;
        }
    } else if (r >= rows0) {
        r -= rows0;
        w = w1;
        o = o1;
        rows = rows1;
        if (r >= rows1) {
            r -= rows1;
            w = w2;
            o = o2;
            rows = rows2;
        }
    }
    *valid = r < rows;
    if (!*valid) {
        w = w0;
        r = 0;
    }
    *wr = w + (size_t)r * (size_t)cols;
    *orow = o;
    *ostride = rows;
    *ridx = r;
}

template <int NC, int RW>
__device__ __forceinline__ void matvec_body(const unsigned short* x, int cols, int n,
                                            const unsigned short* w0, float* o0, int rows0,
                                            const unsigned short* w1, float* o1, int rows1,
                                            const unsigned short* w2, float* o2, int rows2, int mode,
                                            unsigned short* outh, int act)
{
    const int lane = threadIdx.x & 31;
    const long long unit = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    // The warp's RW rows: matrix pointer, output, output row count and row
    // index; an invalid row (past the end) reads row 0 of w0 and writes
    // nothing, so every lane of every warp takes part in the shuffles. In
    // mode 2 slot 2p is a gate row and slot 2p+1 the same row of up.
    const unsigned short* wr[RW];
    float* orow[RW];
    int ostride[RW];
    long long ridx[RW];
    bool valid[RW];
#pragma unroll
    for (int s = 0; s < RW; s++) {
        const long long r = mode == 2 ? (RW / 2) * unit + s / 2 : RW * unit + s;
        mv_row(r, (s & 1) != 0, mode, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, cols, &wr[s], &orow[s],
               &ostride[s], &ridx[s], &valid[s]);
    }
    const bool vec = (cols & 7) == 0;
    // The wide tiles' staging: each thread loads at most XT of a chunk's
    // NC*32 16-byte pieces of x (blockDim.x >= 128 for NC > 4).
    constexpr int XT = NC > 4 ? NC * 32 / 128 : 1;
    for (int c0 = 0; c0 < n; c0 += NC) {
        const int nc = min(NC, n - c0);
        float acc[RW][NC];
#pragma unroll
        for (int s = 0; s < RW; s++) {
#pragma unroll
            for (int c = 0; c < NC; c++) {
                acc[s][c] = 0.0f;
            }
        }
        if (vec && NC > 4) {
            // Wide tiles: the block's warps share each 256-column chunk of
            // the tile's x, widened to float once, through shared memory
            // (lane l's 8 values as two sw_f4 at [c][0][l] and [c][1][l],
            // so a warp's 16-byte reads hit 32 distinct banks). The next
            // chunk's x and W are loaded into registers while this one is
            // summed, so the loads' latency overlaps the arithmetic. Every
            // warp runs the same iterations: the barriers are uniform.
            __shared__ sw_f4 xs[NC * 2 * 32];
            sw_u4 xn[XT];
            sw_u4 wn[RW];
            const sw_u4 zero = {0u, 0u, 0u, 0u};
            // load fetches chunk k0's pieces of x and W into xn, wn.
            auto load = [&](int k0) {
#pragma unroll
                for (int j = 0; j < XT; j++) {
                    const int i = threadIdx.x + j * (int)blockDim.x;
                    const int kk = k0 + 8 * (i & 31);
                    xn[j] = zero;
                    if (i < nc * 32 && kk < cols) {
                        xn[j] = load16(x + (size_t)(c0 + (i >> 5)) * (size_t)cols + kk);
                    }
                }
                const int k = k0 + 8 * lane;
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    wn[s] = zero;
                    if (k < cols) {
                        wn[s] = load16(wr[s] + k);
                    }
                }
            };
            load(0);
            for (int k0 = 0; k0 < cols; k0 += 256) {
#pragma unroll
                for (int j = 0; j < XT; j++) {
                    const int i = threadIdx.x + j * (int)blockDim.x;
                    if (i < nc * 32) {
                        const int c = i >> 5, l = i & 31;
                        xs[(2 * c) * 32 + l] = widen4(xn[j].a, xn[j].b);
                        xs[(2 * c + 1) * 32 + l] = widen4(xn[j].c, xn[j].d);
                    }
                }
                sw_u4 wc[RW];
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    wc[s] = wn[s];
                }
                __syncthreads();
                if (k0 + 256 < cols) {
                    load(k0 + 256);
                }
                if (k0 + 8 * lane < cols) {
#pragma unroll
                    for (int c = 0; c < NC; c++) {
                        if (c < nc) {
                            const sw_f4 lo = xs[(2 * c) * 32 + lane];
                            const sw_f4 hi = xs[(2 * c + 1) * 32 + lane];
#pragma unroll
                            for (int s = 0; s < RW; s++) {
                                acc[s][c] = dot8f(acc[s][c], wc[s], lo, hi);
                            }
                        }
                    }
                }
                __syncthreads();
            }
        } else if (vec) {
#pragma unroll 2
            for (int k = 8 * lane; k < cols; k += 256) {
                sw_u4 a[RW];
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    a[s] = load16(wr[s] + k);
                }
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    if (c < nc) {
                        const sw_u4 xv = load16(x + (size_t)(c0 + c) * (size_t)cols + k);
#pragma unroll
                        for (int s = 0; s < RW; s++) {
                            acc[s][c] = dot8(acc[s][c], a[s], xv);
                        }
                    }
                }
            }
        } else {
            for (int k = lane; k < cols; k += 32) {
                float a[RW];
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    a[s] = f32(wr[s][k]);
                }
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    if (c < nc) {
                        const float xv = f32(x[(size_t)(c0 + c) * (size_t)cols + k]);
#pragma unroll
                        for (int s = 0; s < RW; s++) {
                            acc[s][c] = fmaf(a[s], xv, acc[s][c]);
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int c = 0; c < NC; c++) {
            if (c < nc) { // nc is the same in every lane: the shuffles stay uniform
                float sums[RW];
#pragma unroll
                for (int s = 0; s < RW; s++) {
                    sums[s] = warp_sum(acc[s][c]);
                }
                if (lane == 0) {
                    const size_t t = (size_t)(c0 + c);
                    if (mode == 2) {
#pragma unroll
                        for (int s = 0; s < RW; s += 2) {
                            if (valid[s]) {
                                outh[t * (size_t)rows0 + (size_t)ridx[s]] = f16(glu_one(sums[s], sums[s + 1], act));
                            }
                        }
                    } else {
#pragma unroll
                        for (int s = 0; s < RW; s++) {
                            if (valid[s]) {
                                float* dst = orow[s] + t * (size_t)ostride[s] + (size_t)ridx[s];
                                *dst = mode == 1 ? *dst + sums[s] : sums[s];
                            }
                        }
                    }
                }
            }
        }
    }
}

extern "C" __global__ void matvec_1(const unsigned short* x, int cols, int n, const unsigned short* w0,
                                    float* o0, int rows0, const unsigned short* w1, float* o1, int rows1,
                                    const unsigned short* w2, float* o2, int rows2, int mode,
                                    unsigned short* outh, int act)
{
    matvec_body<1, 2>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}

extern "C" __global__ void matvec_4(const unsigned short* x, int cols, int n, const unsigned short* w0,
                                    float* o0, int rows0, const unsigned short* w1, float* o1, int rows1,
                                    const unsigned short* w2, float* o2, int rows2, int mode,
                                    unsigned short* outh, int act)
{
    matvec_body<4, 2>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}

extern "C" __global__ void matvec_16(const unsigned short* x, int cols, int n, const unsigned short* w0,
                                     float* o0, int rows0, const unsigned short* w1, float* o1, int rows1,
                                     const unsigned short* w2, float* o2, int rows2, int mode,
                                     unsigned short* outh, int act)
{
    matvec_body<16, 2>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}

// ---------------------------------------------------------------------------
// 11. mma_8, mma_16, mma_64
//
// The matrix products of 10 on the tensor cores (SWARM_CUDA_GEMM=mma, sm_80
// and later): out[c, r] = sum_k W[r, k] * x[c, k], W [rows, cols] half,
// x [n, cols] half, float32 sums, for cols % 8 == 0 and n <= 8*NT tokens
// (NT = 1, 2, 8). A block of 8 warps computes a unit of 16 rows for every
// token: warp w takes the 32-column chunks k0 = 32w, 32w + 256, ... in
// order, each as two mma.sync m16n8k16 (f16 x f16, f32 accumulate) per tile
// of 8 tokens, then the warps' partial sums are added in warp order,
// ((w0 + w1) + w2) + ... + w7, through shared memory.
//
// A token's result depends only on its own x and W, never on n, NT or the
// other tokens: the tensor core computes each element of a tile's output
// from its own row of W, column of x and running sum; the chunks and warps
// are summed in a fixed order; a tile's tokens past n are zeros. So a
// decode step, a batch and a prefill chunk give every token bit for bit the
// same values, as with 10 (whose sums are in another order: the two
// families differ in the last bits, and an engine uses one).
//
// Lane l = 4g + q of a warp loads the 8 halves k0 + 8q .. k0 + 8q + 7 of
// the unit's rows g and g+8 and of token g of each tile (16-byte loads,
// each row's 64 bytes by 4 lanes); halves 0-3 fill the fragments of the
// first mma, 4-7 of the second. That assigns W's and x's columns to the
// fragments' k positions by one permutation, which leaves the dot products
// unchanged.
// Row units: mode 0 (store) and 1 (add): rows 16u .. 16u+15 of the stacked
// matrices, written as in 10; mode 2 (glu): gate rows 8u .. 8u+7 as the
// unit's rows 0-7 and the same rows of up as 8-15, so one lane holds the
// gate and up sums of a row and token.
// Launch: blockDim.x = 256, grid.x = units (ceil(rows/16) in modes 0 and 1,
// ceil(rows0/8) in mode 2).

#ifndef SWARM_HOST_EMULATION
// mma16816 is D = A B + D for one m16n8k16 tile (PTX mma.sync, the
// fragment layout of the PTX ISA: a0..a3 f16x2 of rows g, g+8 at k 2q,
// then 2q+8; b0, b1 f16x2 of column g at k 2q, 2q+8; d rows g, g+8 at
// columns 2q, 2q+1).
__device__ __forceinline__ void mma16816(float* d, unsigned int a0, unsigned int a1, unsigned int a2,
                                         unsigned int a3, unsigned int b0, unsigned int b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    asm volatile("trap;"); // the engine runs these kernels only on sm_80 and later
#endif
}
#else
__device__ __forceinline__ void mma16816(float* d, unsigned int a0, unsigned int a1, unsigned int a2,
                                         unsigned int a3, unsigned int b0, unsigned int b1)
{
    host_mma16816(d, a0, a1, a2, a3, b0, b1);
}
#endif

// mma_unit_row is the row (see mv_row) of slot s (0: the unit's row g,
// 1: row g+8) of unit u.
__device__ __forceinline__ long long mma_unit_row(long long u, int g, int s, int mode)
{
    return mode == 2 ? 8 * u + g : 16 * u + g + 8 * s;
}

// MMA_WARPS is the warps of a block, which split each unit's columns.
#define MMA_WARPS 8

template <int NT>
__device__ __forceinline__ void mma_body(const unsigned short* x, int cols, int n, const unsigned short* w0,
                                         float* o0, int rows0, const unsigned short* w1, float* o1, int rows1,
                                         const unsigned short* w2, float* o2, int rows2, int mode,
                                         unsigned short* outh, int act)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, q = lane & 3;
    const long long unit = blockIdx.x;
    const unsigned short* wr[2];
    {
        float* orow;
        int ostride;
        long long ridx;
        bool valid;
        for (int s = 0; s < 2; s++) {
            mv_row(mma_unit_row(unit, g, s, mode), s == 1, mode, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, cols,
                   &wr[s], &orow, &ostride, &ridx, &valid);
        }
    }
    const int nt = (n + 7) / 8;
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            acc[j][i] = 0.0f;
        }
    }
    const sw_u4 zero = {0u, 0u, 0u, 0u};
    // Each iteration loads U chunks of every warp (W, and x for each tile)
    // before it multiplies them, so several loads are in flight per lane.
    // Warp w takes chunks w, w + MMA_WARPS, ... in ascending order whatever
    // U is. Every warp runs the same iterations (a warp past the end adds
    // zeros), so the block's barriers in the host emulation stay uniform.
    constexpr int U = NT >= 8 ? 2 : 4;
    for (int k0 = 0; k0 < cols; k0 += 32 * MMA_WARPS * U) {
        sw_u4 a[U], b[U], xv[U][NT];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int k = k0 + 32 * (warp + MMA_WARPS * u) + 8 * q;
            a[u] = zero;
            b[u] = zero;
            if (k < cols) {
                a[u] = load16(wr[0] + k);
                b[u] = load16(wr[1] + k);
            }
#pragma unroll
            for (int j = 0; j < NT; j++) {
                const int c = 8 * j + g;
                xv[u][j] = zero;
                if (j < nt && c < n && k < cols) {
                    xv[u][j] = load16(x + (size_t)c * (size_t)cols + k);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int j = 0; j < NT; j++) {
                if (j < nt) { // nt is the same in every lane: the mma stays warp-uniform
                    mma16816(acc[j], a[u].a, b[u].a, a[u].b, b[u].b, xv[u][j].a, xv[u][j].b);
                    mma16816(acc[j], a[u].c, b[u].c, a[u].d, b[u].d, xv[u][j].c, xv[u][j].d);
                }
            }
        }
    }
    // The warps' sums, added in warp order by the threads that write them.
    __shared__ float part[MMA_WARPS][NT][32][4];
#pragma unroll
    for (int j = 0; j < NT; j++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            part[warp][j][lane][i] = acc[j][i];
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < nt * 32; e += blockDim.x) {
        const int j = e >> 5, l = e & 31, lg = l >> 2, lq = l & 3;
        float sum[4];
        for (int i = 0; i < 4; i++) {
            float v = part[0][j][l][i];
            for (int w = 1; w < MMA_WARPS; w++) {
                v += part[w][j][l][i];
            }
            sum[i] = v;
        }
        const unsigned short* wrs;
        float* orow[2];
        int ostride[2];
        long long ridx[2];
        bool valid[2];
        for (int s = 0; s < 2; s++) {
            mv_row(mma_unit_row(unit, lg, s, mode), s == 1, mode, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, cols,
                   &wrs, &orow[s], &ostride[s], &ridx[s], &valid[s]);
        }
        for (int h = 0; h < 2; h++) {
            const int c = 8 * j + 2 * lq + h;
            if (c >= n) {
                continue;
            }
            const size_t t = (size_t)c;
            if (mode == 2) {
                if (valid[0]) {
                    outh[t * (size_t)rows0 + (size_t)ridx[0]] = f16(glu_one(sum[h], sum[2 + h], act));
                }
                continue;
            }
            for (int s = 0; s < 2; s++) {
                if (valid[s]) {
                    float* dst = orow[s] + t * (size_t)ostride[s] + (size_t)ridx[s];
                    *dst = mode == 1 ? *dst + sum[2 * s + h] : sum[2 * s + h];
                }
            }
        }
    }
}

extern "C" __global__ void mma_8(const unsigned short* x, int cols, int n, const unsigned short* w0, float* o0,
                                 int rows0, const unsigned short* w1, float* o1, int rows1,
                                 const unsigned short* w2, float* o2, int rows2, int mode, unsigned short* outh,
                                 int act)
{
    mma_body<1>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}

extern "C" __global__ void mma_16(const unsigned short* x, int cols, int n, const unsigned short* w0, float* o0,
                                  int rows0, const unsigned short* w1, float* o1, int rows1,
                                  const unsigned short* w2, float* o2, int rows2, int mode, unsigned short* outh,
                                  int act)
{
    mma_body<2>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}

extern "C" __global__ void mma_64(const unsigned short* x, int cols, int n, const unsigned short* w0, float* o0,
                                  int rows0, const unsigned short* w1, float* o1, int rows1,
                                  const unsigned short* w2, float* o2, int rows2, int mode, unsigned short* outh,
                                  int act)
{
    mma_body<8>(x, cols, n, w0, o0, rows0, w1, o1, rows1, w2, o2, rows2, mode, outh, act);
}


#ifdef SWARM_HOST_EMULATION
// The host emulation's entry points for the kernels that take a segment
// table (testdata/host_main.cc passes it flat): count segments, ptrs holds
// each one's kc then vc, ints its pos, off, n, ring.
static sw_segs sw_segs_from(int count, void* const* ptrs, const int* ints)
{
    sw_segs s{};
    s.count = count;
    for (int i = 0; i < count; i++) {
        s.kc[i] = (unsigned long long)ptrs[2 * i];
        s.vc[i] = (unsigned long long)ptrs[2 * i + 1];
        s.pos[i] = ints[4 * i];
        s.off[i] = ints[4 * i + 1];
        s.n[i] = ints[4 * i + 2];
        s.ring[i] = ints[4 * i + 3];
    }
    return s;
}

extern "C" void store_kv_flat(const float* k, const float* v, int kvDim, int rows, int count, void* const* ptrs,
                              const int* ints)
{
    store_kv(k, v, kvDim, rows, sw_segs_from(count, ptrs, ints));
}

extern "C" void attention_flat(float* out, const float* q, float* scores, int nHeads, int nKVHeads, int headDim,
                               int rows, int window, float scale, int scoreStride, unsigned short* outh, int count,
                               void* const* ptrs, const int* ints)
{
    attention(out, q, scores, nHeads, nKVHeads, headDim, rows, window, scale, scoreStride, outh,
              sw_segs_from(count, ptrs, ints));
}
#endif
