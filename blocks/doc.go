// Package blocks loads Llama-family models (GGUF, llama2.c .bin, Hugging Face
// safetensors directories) and computes them on the CPU: an Engine runs a span
// of transformer blocks for many sessions with per-session attention caches; a
// Head holds the client side (embeddings, final norm, LM head, tokenizer).
// Loading is partial: a span reads only its own blocks' tensors.
//
// This package must never import server/, client/, registry/, sim/,
// placement/, routing/ or any networking package.
package blocks
