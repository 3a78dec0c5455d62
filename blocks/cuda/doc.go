// Package cuda is swarm's GPU block engine: a blocks.Backend named "cuda"
// that computes a span of transformer blocks on an NVIDIA GPU.
//
// It links nothing at build time. The CUDA driver (libcuda.so.1) and NVRTC
// (libnvrtc.so.13, .12 or .11.2), and cuBLAS (libcublas.so.13, .12 or .11)
// only with SWARM_CUDA_GEMM=cublas, are opened with dlopen through
// github.com/ebitengine/purego when a backend is first used, so the swarm
// binary builds with CGO_ENABLED=0 and runs where no GPU or CUDA library
// exists; there, `--device cuda` fails with an error naming
// the library that could not be opened (ErrUnavailable).
//
// The kernels (RMSNorm, RoPE, SwiGLU/GeGLU, residual adds, attention over
// each session's own cache, and the matrix products) are CUDA C in
// kernels.cu, embedded in the binary and compiled with NVRTC for the GPU's
// architecture at start; the PTX is cached on disk (kernels.go). Matrix
// products are the engine's tensor-core kernels (mma.sync tiles, compute
// capability 8.0 and later) or its matvec kernels (CUDA cores, older
// GPUs), both with fp16 weights and activations and float32 sums in an
// order that does not depend on the batch, or cuBLAS's cublasGemmEx;
// SWARM_CUDA_GEMM picks (engine.go). Weights of every GGUF type are
// widened to fp16 on the host as they are uploaded. A pass of several
// sessions (a batch) runs every kernel once for all of them: the cache
// stores and attention take a table of the sessions' rows and caches
// (segTable). SWARM_CUDA_PROFILE=pass|ops prints where the passes spent
// their time (profile.go).
//
// It must never import server, client, registry, placement, routing, sim or
// cmd: it is a backend of package blocks, chosen by name.
package cuda
