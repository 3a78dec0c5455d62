package topologies

import (
	"errors"
	"fmt"
	"math"
)

// ErrBadTopology is returned (wrapped) when a topology file or value is
// malformed: a syntax error, a count that does not match, an edge naming an
// unknown node, a negative or non-finite delay.
var ErrBadTopology = errors.New("topologies: bad topology")

// DelaySource says where an edge's delay came from.
type DelaySource uint8

const (
	// DelayFromFile: the file states the delay (Repetita "delay" column).
	DelayFromFile DelaySource = iota + 1
	// DelayFromCoordinates: great-circle distance between the endpoints
	// divided by a propagation speed (see GraphMLOption).
	DelayFromCoordinates
	// DelayMeanFill: an endpoint has no coordinates; the edge gets the mean of
	// the delays computed from coordinates (the Repetita converter's rule).
	DelayMeanFill
)

// String names the source for reports.
func (s DelaySource) String() string {
	switch s {
	case DelayFromFile:
		return "file"
	case DelayFromCoordinates:
		return "coordinates"
	case DelayMeanFill:
		return "mean-fill"
	}
	return fmt.Sprintf("delaysource(%d)", uint8(s))
}

// Node is one point of presence of a topology.
type Node struct {
	// ID is the node's id in the file: the GraphML node id, or the prefix of
	// the Repetita label before the first '_' (the Zoo node id).
	ID string `json:"id"`
	// Label is the human-readable name ("New York"); may be empty.
	Label string `json:"label"`
	// Lat and Lon are the coordinates in decimal degrees; meaningful only when
	// HasCoords is true.
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
	// HasCoords is false when the file gives no position (GraphML without
	// Latitude/Longitude; Repetita "0.0 0.0", its placeholder for unknown).
	HasCoords bool `json:"has_coords"`
}

// Edge is one directed link u->v. An undirected link of the file is two Edges.
type Edge struct {
	// From and To are indices into Topology.Nodes.
	From int `json:"from"`
	To   int `json:"to"`
	// Delay is the one-way propagation delay in seconds.
	Delay float64 `json:"delay"`
	// Bandwidth is the link capacity in bits per second; 0 when unknown.
	Bandwidth float64 `json:"bandwidth"`
	// DelaySource says how Delay was obtained.
	DelaySource DelaySource `json:"delay_source"`
}

// Report lists what a loader noticed and how it handled it. Nothing in a
// file is dropped without an entry here.
type Report struct {
	// ParallelEdges counts directed edges whose (From, To) pair already
	// appeared. They are kept in Topology.Edges (they add capacity); shortest
	// paths use the smallest delay among them.
	ParallelEdges int `json:"parallel_edges"`
	// SelfLoops counts edges with From == To; kept, and ignored by RTT.
	SelfLoops int `json:"self_loops"`
	// NodesWithoutCoords lists the ids of nodes without a position.
	NodesWithoutCoords []string `json:"nodes_without_coords,omitempty"`
	// OneWayEdges counts directed edges u->v with no v->u edge of the same
	// delay (a Repetita file writes every link as two such edges).
	OneWayEdges int `json:"one_way_edges"`
	// Components is the number of weakly connected components; RTTs between
	// components are +Inf.
	Components int `json:"components"`
	// Warnings explains each of the above in words, one line each.
	Warnings []string `json:"warnings,omitempty"`
}

func (r *Report) warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// Topology is a network of nodes joined by directed edges with delays.
type Topology struct {
	// Name is the file's base name without extension ("Abvt").
	Name string `json:"name"`
	// Network is the operator's name when the file gives one (GraphML
	// "Network" attribute, e.g. "AboveNet"); empty otherwise.
	Network string `json:"network,omitempty"`
	// Nodes in file order; Edge.From/To index this slice.
	Nodes []Node `json:"nodes"`
	// Edges are directed; an undirected link appears as two edges. The paper's
	// Table 3 "#links" counts these directed edges (AboveNet: 62).
	Edges []Edge `json:"edges"`
	// Report lists duplicates, self-loops, missing coordinates and the like.
	Report Report `json:"report"`
}

// DelayRange returns the smallest and largest edge delay in seconds, over
// all edges except self-loops. It returns (0, 0) for a topology without
// edges.
func (t *Topology) DelayRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, e := range t.Edges {
		if e.From == e.To {
			continue
		}
		lo = min(lo, e.Delay)
		hi = max(hi, e.Delay)
	}
	if math.IsInf(lo, 1) {
		return 0, 0
	}
	return lo, hi
}

// validate checks indices and delays and fills the derived Report fields
// (parallel edges, self-loops, one-way edges, components). Loaders call it
// last.
func (t *Topology) validate() error {
	if len(t.Nodes) == 0 {
		return fmt.Errorf("%w: %q has no nodes", ErrBadTopology, t.Name)
	}
	type pair struct{ u, v int }
	seen := map[pair]int{}
	reverse := map[pair][]float64{}
	for i, e := range t.Edges {
		if e.From < 0 || e.From >= len(t.Nodes) || e.To < 0 || e.To >= len(t.Nodes) {
			return fmt.Errorf("%w: edge %d joins nodes %d and %d, want indices in [0, %d)",
				ErrBadTopology, i, e.From, e.To, len(t.Nodes))
		}
		if math.IsNaN(e.Delay) || math.IsInf(e.Delay, 0) || e.Delay < 0 {
			return fmt.Errorf("%w: edge %d (%s -> %s) has delay %g s, want a finite value >= 0",
				ErrBadTopology, i, t.Nodes[e.From].ID, t.Nodes[e.To].ID, e.Delay)
		}
		if math.IsNaN(e.Bandwidth) || e.Bandwidth < 0 {
			return fmt.Errorf("%w: edge %d (%s -> %s) has bandwidth %g bit/s, want >= 0",
				ErrBadTopology, i, t.Nodes[e.From].ID, t.Nodes[e.To].ID, e.Bandwidth)
		}
		if e.From == e.To {
			t.Report.SelfLoops++
			t.Report.warnf("edge %d is a self-loop at node %s; kept, ignored by RTT", i, t.Nodes[e.From].ID)
			continue
		}
		p := pair{e.From, e.To}
		if n := seen[p]; n > 0 {
			t.Report.ParallelEdges++
			t.Report.warnf("edge %d duplicates link %s -> %s (occurrence %d); kept as extra capacity, shortest paths use the smallest delay",
				i, t.Nodes[e.From].ID, t.Nodes[e.To].ID, n+1)
		}
		seen[p]++
		reverse[p] = append(reverse[p], e.Delay)
	}
	for _, e := range t.Edges {
		if e.From == e.To {
			continue
		}
		back := reverse[pair{e.To, e.From}]
		found := false
		for _, d := range back {
			if d == e.Delay {
				found = true
				break
			}
		}
		if !found {
			t.Report.OneWayEdges++
			t.Report.warnf("edge %s -> %s (delay %g s) has no reverse edge with the same delay; RTT adds the two one-way path delays",
				t.Nodes[e.From].ID, t.Nodes[e.To].ID, e.Delay)
		}
	}
	t.Report.Components = t.components()
	if t.Report.Components > 1 {
		t.Report.warnf("topology has %d connected components; RTT between them is +Inf", t.Report.Components)
	}
	return nil
}

// components counts weakly connected components with a union-find.
func (t *Topology) components() int {
	parent := make([]int, len(t.Nodes))
	for i := range parent {
		parent[i] = i
	}
	find := func(a int) int {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	n := len(t.Nodes)
	for _, e := range t.Edges {
		ra, rb := find(e.From), find(e.To)
		if ra != rb {
			parent[ra] = rb
			n--
		}
	}
	return n
}
