// Package api is the session protocol between swarm clients and servers,
// owned by neither party: the HTTP paths (/v1/inference, /v1/info) and
// libp2p stream protocols (/swarm/inference/1, /swarm/info/1); the one info
// document every server answers (Info, with its own Admission type, for
// block servers and full-range replicas alike) and the one way to read it
// (FetchInfo over HTTP, ReadInfo from any stream; one size limit,
// MaxInfoBytes); the normalization of server addresses ("host:port",
// "ws://host:port", "libp2p://PEERID") into Endpoints; and FrameConn, a
// connection carrying swarm/wire frames, with its implementations: one
// frame per websocket binary message (gorilla/websocket), frames back to
// back on any reliable byte stream (a libp2p stream, a net.Conn), and an
// in-memory pair for tests (Pipe).
//
// server/, client/, ingress/ and node/ all speak through this package, so
// the session protocol never depends on either party's internals or on the
// transport that carries it.
//
// This package must never import any package of this repository other
// than swarm and swarm/wire.
package api
