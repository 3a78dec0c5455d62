// Package routing chooses the chain of servers a session traverses: the
// feasible routing graph of Lemma 3.1, the link costs (4), (8) and waiting
// times (20), Waiting-penalized Shortest-path Request Routing (WS-RR, Alg. 2
// lines 10-13) of Sun, He, Ji, Parag 2025 (../shared/papers/003), the exact
// myopic optimum of (21) ("Optimized RR", Sec. 4.3) and the PETALS routing
// heuristic as a baseline.
//
// The package is PURE: inputs are value snapshots of what servers advertise
// (span, tau, RTT from this client, cache capacity, the (remaining time,
// caches held) of their open sessions) and the current time as a number of
// seconds; there is no I/O, no goroutine, no clock and no logging, so the
// simulator and the live client call the same functions. Full-range servers
// (whole-model replicas) are spans [0, L) and appear as single-hop chains.
//
// Spans are 0-based and half-open (swarm.Span); the paper's a_j is
// Span.Start+1 and m_j is Span.Len().
//
// This package must never import net, os, time, sync, net/http, libp2p or any
// package of this repository other than swarm (the root deps_test.go enforces it).
package routing
