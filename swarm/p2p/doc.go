// Package p2p is the node network of the swarm: a libp2p host with TCP and
// QUIC transports, Noise and TLS security, a persistent Ed25519 identity,
// bootstrap peers dialled with exponential back-off, a private Kademlia DHT
// (protocol prefix /swarm, so nodes never join the public IPFS DHT) used as a
// rendezvous to find peers beyond the bootstrap peer, hole punching, a circuit
// relay client (and optionally a relay service), NAT port mapping and an
// optional pre-shared swarm key (libp2p private network).
//
// Every node command (serve, generate, proxy, status) builds a Config from the
// common flags (Config.AddFlags), then calls New. The registry (package
// registry) and the data plane run on top of Node.Host. Besides the node
// rendezvous, a node can advertise itself at other DHT namespaces and look
// them up (AdvertiseAt, FindAt: clients and ingress nodes advertise at
// ClientRendezvous so that joining servers find them) and measure round
// trip times with the libp2p ping protocol (Ping).
//
// The design follows OpenTela's node network (paper 000, Sec. 3.2: "A new node
// joins the network by contacting one or more bootstrap peers. If all
// bootstrap peers are temporarily unreachable, the node retries with
// exponential backoff until connectivity is restored. Once connected, the node
// uses the Kademlia DHT to discover other peers").
//
// This package must never import registry, server, client, placement,
// routing, blocks or cmd: it knows nothing about models or the registry.
package p2p

import "errors"

// Sentinel errors, wrapped with details by the functions that return them.
var (
	// ErrBadConfig is returned by Config.Validate and New for a bad flag value.
	ErrBadConfig = errors.New("p2p: bad config")
	// ErrBadIdentity is returned when an identity file exists but does not
	// hold a libp2p private key (it is never silently replaced).
	ErrBadIdentity = errors.New("p2p: bad identity file")
	// ErrBadSwarmKey is returned when a swarm key file is not in the
	// /key/swarm/psk/1.0.0/ format.
	ErrBadSwarmKey = errors.New("p2p: bad swarm key file")
	// ErrClosed is returned by calls on a closed Node.
	ErrClosed = errors.New("p2p: node closed")
)
