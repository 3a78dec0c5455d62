// Package loadtest generates load on streaming text generation and
// measures it, the library behind `swarm proxy bench`. A Request is one
// streaming generation measured from its start to its first token (TTFT)
// and to its end; RunPhase runs rounds of concurrent requests and
// summarizes them as nearest-rank TTFT percentiles and the mean time per
// output token (TPOT). Requests come over the client library in this
// process (Direct) or over the OpenAI-compatible HTTP API of an ingress
// (Completions), so Compare can report what the ingress adds.
//
// It measures the ingress from outside, as any HTTP client would: this
// package must never import ingress or its front ends, server, registry,
// node, sim or cmd.
package loadtest
