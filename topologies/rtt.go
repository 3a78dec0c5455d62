package topologies

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
)

// RTTMatrix holds round-trip times between the nodes of a topology, in
// seconds: At(i, j) = d(i->j) + d(j->i), where d is the delay of the
// delay-shortest directed path. For symmetric links (every file we ship)
// this is 2 x the one-way shortest-path delay, the "x2 for round trip" of
// the issue; paper 003 Sec. 4.1 computes RTTs "according to the cumulative
// delays along the delay-based shortest paths". Unreachable pairs are +Inf;
// At(i, i) = 0.
type RTTMatrix struct {
	n    int
	data []float64 // row-major n x n
}

// N returns the number of nodes.
func (m *RTTMatrix) N() int { return m.n }

// At returns the RTT in seconds between nodes i and j (indices into
// Topology.Nodes). It panics on an index out of range, like a slice.
func (m *RTTMatrix) At(i, j int) float64 { return m.data[i*m.n+j] }

// Range returns the smallest and largest finite RTT between distinct nodes,
// in seconds; (0, 0) for fewer than two nodes.
func (m *RTTMatrix) Range() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := 0; i < m.n; i++ {
		for j := 0; j < m.n; j++ {
			if v := m.At(i, j); i != j && !math.IsInf(v, 1) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 0
	}
	return lo, hi
}

// RTT computes the RTT matrix with Dijkstra (gonum graph/path) on the
// directed edge delays. Parallel edges count with their smallest delay;
// self-loops are ignored. It returns an error wrapping ErrBadTopology for a
// negative or non-finite delay.
func (t *Topology) RTT() (*RTTMatrix, error) {
	g := simple.NewWeightedDirectedGraph(0, math.Inf(1))
	for i := range t.Nodes {
		g.AddNode(simple.Node(int64(i)))
	}
	for i, e := range t.Edges {
		if math.IsNaN(e.Delay) || math.IsInf(e.Delay, 0) || e.Delay < 0 {
			return nil, fmt.Errorf("%w: edge %d has delay %g s, want a finite value >= 0", ErrBadTopology, i, e.Delay)
		}
		if e.From == e.To {
			continue
		}
		u, v := int64(e.From), int64(e.To)
		if w, ok := g.Weight(u, v); ok && w <= e.Delay {
			continue
		}
		g.SetWeightedEdge(g.NewWeightedEdge(simple.Node(u), simple.Node(v), e.Delay))
	}
	all := path.DijkstraAllPaths(g)
	n := len(t.Nodes)
	one := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				one[i*n+j] = all.Weight(int64(i), int64(j))
			}
		}
	}
	m := &RTTMatrix{n: n, data: make([]float64, n*n)}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			m.data[i*n+j] = one[i*n+j] + one[j*n+i]
		}
	}
	return m, nil
}
