// Package api is the network face of a swarm server as both ends see it: the
// HTTP paths (/v1/inference, /v1/info), the JSON document of GET /v1/info,
// the normalization of server addresses ("host:port", "ws://host:port") into
// URLs, and FrameConn, a connection that carries swarm/wire frames, with two
// implementations: one frame per websocket binary message (gorilla/websocket)
// and frames back to back on any reliable byte stream (io.ReadWriteCloser,
// e.g. a libp2p stream for /swarm/inference/1), and the names of the libp2p
// stream protocols (InferenceProtocol, InfoProtocol) with the
// "libp2p://PEERID" endpoints of servers reached through them.
//
// server/ and client/ both speak through FrameConn, so the session protocol
// never depends on the transport that carries it.
//
// This package must never import server/, client/, blocks/ or any package of
// this repository other than swarm, swarm/wire and server/admission (whose
// Snapshot the info document embeds).
package api
