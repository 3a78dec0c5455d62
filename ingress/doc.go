// Package ingress is the core of an ingress node (DESIGN.md "ingress";
// OpenTela, paper 000 Sec. 3.2 "API frontend", Sec. 3.4 "Life of an
// inference request"): it holds the client side (blocks.Head) of each model
// it serves, reads the candidate servers of a model from a Source (block
// servers hosting spans, and full-range replicas hosting [0, L) of an
// OpenAI-compatible engine), prunes them by the request's trusted-provider
// allowlist (paper 000 Sec. 3.3), routes each request over ONE routing graph
// with WS-RR (routing.WSRR, paper 003 Alg. 2 lines 10-13) in which a replica
// is a single [0, L) hop, and generates the text: over a chain of block
// servers with client.Session (hub-spoke, client-side caches, failover), or by
// forwarding the text to the replica. It cuts stop sequences, counts usage
// per API key, exports Prometheus metrics and the read-only state document.
//
// The protocol front ends live in subpackages: ingress/openai (the
// OpenAI-compatible HTTP API) and ingress/petals (the PETALS-compatible
// websocket API); both drive a Gateway.
//
// This package must never import server/, registry/, node/, sim/, cmd/ or
// its own front-end subpackages: it reads servers through api/, the
// protocol both ends share.
package ingress
