// Package placement chooses which consecutive span of transformer blocks each
// server hosts: Conservative Greedy Block Placement (CG-BP, Alg. 1 lines 1-9
// and Alg. 2 of Sun, He, Ji, Parag 2025, "Optimizing resource allocation for
// geographically-distributed inference by LLMs", ../shared/papers/003), its
// incremental form for one joining server, the PETALS placement heuristic
// and the paper's ablations "Optimized Order" and "Optimized Number" as
// baselines, the bounds (17), (18), (19) and (B.8), and an exhaustive exact
// optimum of BPRR (6) for tiny fleets.
//
// Live replanning (the slow time scale of Alg. 2 in a running swarm):
// Live is the placement servers reach by joining one at a time;
// Replan computes the CG-BP target over the alive servers, a
// make-before-break migration to it (Migrate: steps of parallel moves that
// never uncover a block, bytes loaded per step) and whether it is worth
// applying (a hole, a block below capacity R, or an idle per-token gain,
// IdlePerToken, above a threshold); SelfReplan is the same decision seen
// by one server, for decentralized rebalancing.
//
// The package is PURE: every function is a function of a value snapshot
// (Input). Time arrives as numbers of seconds, memory as bytes; there is no
// I/O, no goroutine, no clock, no logging and no global state, so the
// simulator (sim/) and the live server (`swarm serve --blocks auto`) call the
// same code.
//
// Indices: the paper numbers blocks 1..L; this package uses swarm.Span, which
// is 0-based and half-open, so the paper's a_j is Span.Start+1 and m_j is
// Span.End-Span.Start.
//
// This package must never import net, os, time, sync, net/http, libp2p or any
// package of this repository other than swarm (the root deps_test.go enforces it).
package placement
