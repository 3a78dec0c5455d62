// Package blocks loads decoder-only models (GGUF, llama2.c .bin, Hugging Face
// safetensors directories) of the architectures in its table (arch.go and
// one arch_<name>.go per family: llama, mistral, qwen2, qwen3, gemma3) and
// computes them on the CPU: an Engine runs a span
// of transformer blocks for many sessions with per-session attention caches; a
// Head holds the client side (embeddings, final norm, LM head, tokenizer).
// Loading is partial: a span reads only its own blocks' tensors.
//
// Typical use: Open a model (format detected from the path), read Info (the
// swarm.ModelInfo placement needs: shapes, s_m = BlockBytes, cache bytes per
// token), then LoadSpan on a server or LoadHead on a client; Generate drives
// a Head, a Sampler and any Forwarder (a local Session, or a chain of
// servers) with llama2.c's run.c semantics.
//
// Conventions: weights keep their file dtype in memory (f32, f16, bf16,
// and GGML's quantized blocks: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k ... q6_k,
// iq4_nl, iq4_xs, mixed freely in one file, memory-mapped). f32, f16 and
// bf16 are multiplied by float32 activations with AVX2/FMA/F16C (and
// AVX-512) kernels on amd64; every quantized type, on a CPU with AVX-512
// VNNI, by activations rounded to 8 bits as llama.cpp rounds them (q32.go,
// q8act.go, q8k.go, iq4xs.go). Without VNNI, and everywhere with -tags
// purego, the quantized types take float32 activations too (AVX2 kernels
// for q8_0, q4_0, iq4_nl, iq4_xs and the k-quants; q4_1, q5_0 and q5_1
// dequantized a block at a time in Go). Products are spread over a
// process-wide pool of GOMAXPROCS-1 workers plus the caller.
// Attention caches are float32 (sliding-window blocks still get full-length
// caches; ModelInfo.BlockCacheBytes is what they need). RoPE rotates
// adjacent pairs (llama2.c and llama GGUF layout); q/k weights stored in
// rotate-half order (Hugging Face, NeoX-RoPE GGUF families) are permuted
// into it when loaded, with their biases and per-head norms.
// Prefill (nTokens > 1) computes bit-identical results to token-by-token
// decode, so a replay after failover reproduces the original caches.
//
// This package must never import server/, client/, registry/, sim/,
// placement/, routing/ or any networking package.
package blocks
