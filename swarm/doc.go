// Package swarm is the shared vocabulary of the project: the types that the
// server, the client, the registry, the simulator, placement and routing all
// speak (Span, ModelInfo, ServerInfo, lifecycle states, dtypes) and the
// sentinel errors callers branch on.
//
// It holds types, small pure helpers on them and interfaces; no
// implementations of I/O. Its subpackages carry the wire codec (swarm/wire)
// and the libp2p node network (swarm/p2p).
//
// This package must never import any other package of this repository, and
// never net, os or time-dependent logic: everything else imports it.
package swarm
