// Package fleet reads fleet files, the JSON description of a deployment that
// `swarm plan` places blocks on: a model (L blocks of s_m bytes, s_c cache
// bytes per block per session), the client names, and the servers with
// their memory M_j, speed tau_j and per-token round trip time t_cj to every
// client (paper 003, Sun, He, Ji, Parag 2025, Sec. 2.2). It validates a file
// field by field, chooses the target number of concurrent sessions R, and
// runs a plan: one placement algorithm, the bounds (17) and (B.8), and the
// route each client's next session takes on the idle swarm, with the
// routing the simulator pairs with that placement (sim.ForPlacement).
//
// Reading a file is the only I/O here; placement and routing stay pure in
// their own packages. This package must never import server, client,
// registry, node, ingress, blocks or cmd, nor net, nor depend on the
// network (net/http, libp2p) transitively.
package fleet
