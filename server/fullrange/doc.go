// Package fullrange registers a whole-model replica of an OpenAI-compatible
// engine (vLLM, SGLang, llama.cpp's server, ollama, ...) as a full-range
// server of the swarm (DESIGN.md "full-range server"; OpenTela, paper 000
// Sec. 3.4 "Life of a node", Sec. 4 wrapping vLLM/SGLang processes): a
// sidecar that optionally starts the engine as a child process, waits for
// its /health, reads its /v1/models, measures its per-token time through
// its API (tau_j of paper 003 as seen through the engine: per-token decode
// time / L), advertises span [0, L) with FullRange set in GET /v1/info, and
// forwards the OpenAI API (/v1/completions, /v1/chat/completions,
// /v1/models) to the engine. It polls /health and /v1/models and
// advertises "down" while they fail; with a child process it exits when the
// child dies, and kills the child when it exits.
//
// This package must never import client/, ingress/, registry/ or cmd/.
package fullrange
