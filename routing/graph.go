package routing

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/swarmllm/swarm/swarm"
)

// Graph is the feasible routing topology G^c_{a,m} of paper 003 (Fig. 4,
// Lemma 3.1, Lemma 3.4's proof) for one client: nodes are the servers
// (indices 0..n-1), the S-client Source() = n and the D-client Sink() = n+1.
// The S-client holds a dummy block before block 0 (paper: a = 0, m = 1) and
// the D-client one after block L-1 (a = L+1, m = 1). An edge (i, j) exists
// iff a_j <= a_i + m_i <= a_j + m_j - 1 (eq. 3), which with 0-based
// half-open spans reads Start_j <= End_i < End_j (End of the S-client is 0;
// the edge into the D-client needs End_i = L). Server j then processes the
// blocks [End_i, End_j). End grows strictly along every edge, so the graph
// is a DAG.
type Graph struct {
	// Blocks is L.
	Blocks int
	// Spans are the servers' hosted spans.
	Spans []swarm.Span
	// Out lists the edges leaving each node, in increasing target index.
	Out [][]Edge
	// topo lists the server nodes in increasing End (ties by index): a
	// topological order.
	topo []int
}

// Edge is one feasible link (i, j) of the routing graph.
type Edge struct {
	// From and To are node indices (servers, Source or Sink).
	From, To int
	// Blocks are the blocks server To processes after From:
	// [a_i + m_i, a_j + m_j) in 0-based terms; empty for the edge into Sink.
	Blocks swarm.Span
}

// Source returns the node index of the S-client.
func (g *Graph) Source() int { return len(g.Spans) }

// Sink returns the node index of the D-client.
func (g *Graph) Sink() int { return len(g.Spans) + 1 }

// end returns a_i + m_i - 1 in 0-based terms: the End of node i's span.
func (g *Graph) end(i int) int {
	switch i {
	case g.Source():
		return 0
	case g.Sink():
		return g.Blocks + 1
	}
	return g.Spans[i].End
}

// NewGraph builds the routing graph of Lemma 3.1 for servers hosting the
// given spans of an L-block model. Errors wrap ErrBadInput for a span
// outside [0, L) or empty.
func NewGraph(spans []swarm.Span, blocks int) (*Graph, error) {
	if blocks <= 0 {
		return nil, fmt.Errorf("%w: blocks L = %d, want > 0", ErrBadInput, blocks)
	}
	for j, s := range spans {
		if err := s.Validate(blocks); err != nil {
			return nil, fmt.Errorf("%w: spans[%d]: %w", ErrBadInput, j, err)
		}
	}
	n := len(spans)
	g := &Graph{Blocks: blocks, Spans: spans, Out: make([][]Edge, n+2)}
	from := make([]int, 0, n+1)
	from = append(from, g.Source())
	for i := range n {
		from = append(from, i)
	}
	// count the edges first so that they share one backing array
	count := 0
	for _, i := range from {
		e := g.end(i)
		for j, s := range spans {
			if j != i && s.Start <= e && e < s.End {
				count++
			}
		}
		if i != g.Source() && e == blocks {
			count++
		}
	}
	edges := make([]Edge, 0, count)
	for _, i := range from {
		e := g.end(i)
		first := len(edges)
		for j, s := range spans {
			if j != i && s.Start <= e && e < s.End {
				edges = append(edges, Edge{From: i, To: j, Blocks: swarm.Span{Start: e, End: s.End}})
			}
		}
		if i != g.Source() && e == blocks {
			edges = append(edges, Edge{From: i, To: g.Sink(), Blocks: swarm.Span{Start: blocks, End: blocks}})
		}
		g.Out[i] = edges[first:len(edges):len(edges)]
	}
	g.topo = make([]int, n)
	for i := range n {
		g.topo[i] = i
	}
	slices.SortStableFunc(g.topo, func(a, b int) int { return cmp.Compare(spans[a].End, spans[b].End) })
	return g, nil
}

// ChainError says which hop of a chain violates Lemma 3.1.
type ChainError struct {
	// Hop is the index in the chain of the server that cannot follow the
	// previous one (len(chain) when the chain ends before block L-1).
	Hop int
	// Need is the 0-based block the hop would have to process next.
	Need int
	// Span is the offending server's span (empty for a short chain).
	Span swarm.Span
}

func (e *ChainError) Error() string {
	if e.Span.Empty() {
		return fmt.Sprintf("%v: the chain stops before block %d", ErrBadChain, e.Need)
	}
	return fmt.Sprintf("%v: hop %d hosts %s but the next block to process is %d (Lemma 3.1 needs start <= %d < end)",
		ErrBadChain, e.Hop, e.Span, e.Need, e.Need)
}

// Unwrap makes errors.Is(err, ErrBadChain) true.
func (e *ChainError) Unwrap() error { return ErrBadChain }

// CheckChain checks that the chain of server indices is a feasible route
// (Lemma 3.1, eq. 3) through servers hosting spans of an L-block model, and
// returns the blocks each hop processes (the first server hosting a block
// processes it). Errors wrap ErrBadChain (as *ChainError) or ErrBadInput.
func CheckChain(spans []swarm.Span, blocks int, chain []int) ([]swarm.Span, error) {
	out := make([]swarm.Span, len(chain))
	next := 0 // a_i + m_i - 1 of the previous node, i.e. the next 0-based block
	for h, j := range chain {
		if j < 0 || j >= len(spans) {
			return nil, fmt.Errorf("%w: chain[%d] = %d, want a server index in [0, %d)", ErrBadInput, h, j, len(spans))
		}
		s := spans[j]
		if next >= blocks || !(s.Start <= next && next < s.End) {
			return nil, &ChainError{Hop: h, Need: next, Span: s}
		}
		out[h] = swarm.Span{Start: next, End: s.End}
		next = s.End
	}
	if next != blocks {
		return nil, &ChainError{Hop: len(chain), Need: next}
	}
	return out, nil
}

// NoRouteError says how far a route could get.
type NoRouteError struct {
	// Reach is the number of leading blocks [0, Reach) some chain covers.
	Reach int
	// Blocks is L.
	Blocks int
	// Waiting is true when chains cover all blocks but each uses a server
	// whose cache capacity can never hold the session (eq. 20 is infinite).
	Waiting bool
}

func (e *NoRouteError) Error() string {
	if e.Waiting {
		return fmt.Sprintf("%v: every chain through the %d blocks uses a server whose attention-cache capacity is below what the session needs", ErrNoRoute, e.Blocks)
	}
	return fmt.Sprintf("%v: no chain of servers hosts block %d (blocks [0, %d) of %d are reachable)", ErrNoRoute, e.Reach, e.Reach, e.Blocks)
}

// Unwrap makes errors.Is(err, ErrNoRoute) true.
func (e *NoRouteError) Unwrap() error { return ErrNoRoute }

// reach returns how many leading blocks some chain of g covers.
func (g *Graph) reach() int {
	r := 0
	seen := make([]bool, len(g.Spans)+2)
	stack := []int{g.Source()}
	seen[g.Source()] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i != g.Source() {
			r = max(r, g.end(i))
		}
		for _, e := range g.Out[i] {
			if e.To != g.Sink() && !seen[e.To] {
				seen[e.To] = true
				stack = append(stack, e.To)
			}
		}
	}
	return min(r, g.Blocks)
}
