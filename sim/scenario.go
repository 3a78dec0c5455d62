package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/swarmllm/swarm/topologies"
)

// Clustered returns the clustered fleet of paper 003 Sec. 4.1 and Table 2
// (topologies.PaperClusters): two A100 servers in Cluster1, seven MIG
// servers in Cluster2, and the client in clientCluster (0: remote from
// every server, 1: next to the A100s, 2: next to the MIGs), serving
// BLOOM-176B with the paper's overheads and PETALS constants.
func Clustered(clientCluster int) (*Fleet, error) {
	c := topologies.PaperClusters()
	if clientCluster < 0 || clientCluster >= len(c.Names) {
		return nil, fmt.Errorf("%w: client cluster %d, want 0, 1 or 2 (paper 003 Table 2)", ErrBadConfig, clientCluster)
	}
	f := &Fleet{
		Model:      BLOOM176B(),
		ClientNode: clientCluster,
		Overheads:  PaperOverheads(),
		Petals:     DefaultPetalsConfig(),
	}
	for i := range 2 {
		f.Servers = append(f.Servers, Server{Name: fmt.Sprintf("A100-%d", i), Hardware: A100(), Node: 1})
	}
	for i := range 7 {
		f.Servers = append(f.Servers, Server{Name: fmt.Sprintf("MIG-%d", i), Hardware: MIG(), Node: 2})
	}
	for _, s := range f.Servers {
		f.ClientRTT = append(f.ClientRTT, c.RTT(clientCluster, s.Node))
		row := make([]float64, len(f.Servers))
		for j, t := range f.Servers {
			row[j] = c.RTT(s.Node, t.Node)
		}
		f.ServerRTT = append(f.ServerRTT, row)
	}
	return f, nil
}

// OnTopology returns the scattered fleet of paper 003 Sec. 4.1: `servers`
// servers at distinct nodes of top drawn at random, round(eta * servers) of
// them (drawn at random) A100s and the rest MIGs, and the client at a random
// node without a server. RTTs come from rtt (delay-shortest paths, x2).
// rng draws, in order, the server nodes, the A100 subset and the client
// node. Errors wrap ErrBadConfig (too many servers, eta outside [0, 1], a
// client or server unreachable).
func OnTopology(top *topologies.Topology, rtt *topologies.RTTMatrix, servers int, eta float64, rng *rand.Rand) (*Fleet, error) {
	n := len(top.Nodes)
	switch {
	case rtt == nil || rtt.N() != n:
		return nil, fmt.Errorf("%w: RTT matrix does not match topology %s (%d nodes)", ErrBadConfig, top.Name, n)
	case servers < 1 || servers > n-1:
		return nil, fmt.Errorf("%w: %d servers on %s, want 1..%d (one node per server, one left for the client)", ErrBadConfig, servers, top.Name, n-1)
	case math.IsNaN(eta) || eta < 0 || eta > 1:
		return nil, fmt.Errorf("%w: A100 fraction eta = %g, want a number in [0, 1]", ErrBadConfig, eta)
	}
	perm := rng.Perm(n)
	nodes, free := perm[:servers], perm[servers:]
	a100 := int(math.Round(eta * float64(servers)))
	isA100 := make([]bool, servers)
	for _, k := range rng.Perm(servers)[:a100] {
		isA100[k] = true
	}
	client := free[rng.IntN(len(free))]

	f := &Fleet{
		Model:      BLOOM176B(),
		ClientNode: client,
		Overheads:  PaperOverheads(),
		Petals:     DefaultPetalsConfig(),
	}
	counts := map[string]int{}
	for k, node := range nodes {
		hw := MIG()
		if isA100[k] {
			hw = A100()
		}
		name := fmt.Sprintf("%s-%d@%s", hw.Kind, counts[hw.Kind], nodeName(top.Nodes[node]))
		counts[hw.Kind]++
		f.Servers = append(f.Servers, Server{Name: name, Hardware: hw, Node: node})
	}
	for _, s := range f.Servers {
		d := rtt.At(client, s.Node)
		if math.IsInf(d, 1) {
			return nil, fmt.Errorf("%w: topology %s: server node %s is unreachable from client node %s",
				ErrBadConfig, top.Name, top.Nodes[s.Node].ID, top.Nodes[client].ID)
		}
		f.ClientRTT = append(f.ClientRTT, d)
		row := make([]float64, len(f.Servers))
		for j, t := range f.Servers {
			row[j] = rtt.At(s.Node, t.Node)
			if math.IsInf(row[j], 1) {
				return nil, fmt.Errorf("%w: topology %s: server nodes %s and %s are not connected",
					ErrBadConfig, top.Name, top.Nodes[s.Node].ID, top.Nodes[t.Node].ID)
			}
		}
		f.ServerRTT = append(f.ServerRTT, row)
	}
	return f, nil
}

func nodeName(n topologies.Node) string {
	if n.Label != "" && n.Label != "None" {
		return n.Label
	}
	return n.ID
}
