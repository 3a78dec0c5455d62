// Package client drives sessions over chains of swarm servers (DESIGN.md
// "client/"): it holds only the model's head (embeddings, final norm, LM
// head, tokenizer), takes candidate servers from New's list and from a
// Source asked at every Open and failover (package node lists the
// registry's SERVING servers), discovers them through GET /v1/info (or an
// InfoFetcher for other transports, such as libp2p streams),
// chooses a chain covering all blocks with WS-RR (routing.WSRR, paper 003
// Alg. 2 lines 10-13), sends hidden states to each hop in turn (hub-spoke),
// keeps for each hop the inputs it sent (the client-side cache), runs the
// LM head and the sampler, and streams tokens through an iter.Seq2.
//
// When a hop dies, errors or times out mid-session, the client replaces it
// by one or more servers covering the blocks that hop processed (their spans
// may start earlier or end later: Lemma 3.1 sub-spans), replays the hop's
// input history at the original positions, and continues; greedy output is
// identical to an undisturbed run.
//
// Per-token round trip times t_cj (request round trip minus the server's
// reported compute time, paper 003 eq. 1) are measured for every hop and
// kept in Stats.
//
// This package must never import server/, registry/, sim/ or cmd/: it
// speaks to servers through api/, the protocol both ends share.
package client
