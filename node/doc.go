// Package node joins the data plane (server/, client/) to the registry and
// the node network (registry/, swarm/p2p): it is what `swarm serve --blocks
// auto`, `swarm generate --bootstrap` and the ingress run on top of.
//
// Client side: Candidates lists the servers of a model from a registry
// replica (SERVING and not SUSPECTED; JOIN, DOWN and LEFT servers are left
// out) as a client.Source, so that a session chooses its chain with WS-RR
// among them and re-routes on failure with the registry as the candidate
// source; WaitCovered waits until they cover every block. Transport opens
// the /swarm/inference/1 and /swarm/info/1 libp2p stream protocols to
// servers reachable only through libp2p (a circuit relay, or no websocket
// advertised); Candidates.ClientOptions wires both into client.New,
// preferring a server's websocket and falling back to its libp2p streams.
// JoinClient starts a client-only member (DHT client mode, nothing
// published, advertised at p2p.ClientRendezvous so servers can measure
// their RTTs to it).
//
// Server side: ChooseSpan is incremental CG-BP (placement.Incremental,
// paper 003 Alg. 2) over the registry, with a deterministic rule for
// servers joining at the same moment; RunServer measures a server (tau,
// tauI on a probe block, memory, RTTs to the client nodes), announces JOIN
// with a tentative span, settles, loads the final span, serves it over the
// websocket and the libp2p streams (ServeStreams), announces SERVING and
// its load as sessions open and close, DOWN on failure and LEFT on
// shutdown. Its Mover moves it live to another span (replanning):
// make-before-break when its memory holds both spans (the new span is
// announced SERVING before the old one stops, the old one drains the
// sessions open on it), else drain first; ServerInfo.MovingTo and
// Draining show the move in the registry, and Candidates keep routing by
// Span and state alone.
//
// This package must never import cmd/ or sim/; placement and routing stay
// pure and are called with values built here.
package node
