// Package cuda is swarm's GPU block engine: a blocks.Backend named "cuda"
// that computes a span of transformer blocks on an NVIDIA GPU.
//
// It links nothing at build time. The CUDA driver (libcuda.so.1), cuBLAS
// (libcublas.so.12 or .11) and NVRTC (libnvrtc.so.12 or .11.2) are opened
// with dlopen through github.com/ebitengine/purego when a backend is first
// used, so the swarm binary builds with CGO_ENABLED=0 and runs where no GPU
// or CUDA library exists; there, `--device cuda` fails with an error naming
// the library that could not be opened (ErrUnavailable).
//
// The small kernels (RMSNorm, RoPE, SwiGLU/GeGLU, residual adds, attention
// over the session's cache) are CUDA C in kernels.cu, embedded in the
// binary and compiled with NVRTC for the GPU's architecture at start; the
// PTX is cached on disk (ptxcache.go). Matrix products go through cuBLAS
// (cublasGemmEx) with fp16 weights and activations and float32
// accumulation. Weights of every GGUF type are widened to fp16 on the host
// as they are uploaded.
//
// It must never import server, client, registry, placement, routing, sim or
// cmd: it is a backend of package blocks, chosen by name.
package cuda
