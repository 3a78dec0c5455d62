package placement

import (
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// IdlePerToken returns the decode time per token, in seconds, of a new
// session routed on an idle swarm (no open session, so every wait of eq. 20
// is 0 and WS-RR is a shortest path on the graph of Lemma 3.1), averaged
// over the clients weighted by their demand |R_c|: for each client c the
// least sum over the chain of t_cj + k_j tau_j (eq. 1, decode part), where
// a hop on server j processes from the previous hop's end to the end of
// span j. It is +Inf when some client with demand has no chain. spans are
// indexed like in.Servers (empty: hosts nothing). Errors wrap ErrBadInput.
func IdlePerToken(in Input, spans []swarm.Span) (float64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	if len(spans) != len(in.Servers) {
		return 0, fmt.Errorf("%w: %d spans, want one per server (%d)", ErrBadInput, len(spans), len(in.Servers))
	}
	for j, s := range spans {
		if s == (swarm.Span{}) {
			continue
		}
		if err := s.Validate(in.Model.Blocks); err != nil {
			return 0, fmt.Errorf("%w: spans[%d] (%s): %w", ErrBadInput, j, in.Servers[j].Name, err)
		}
	}
	return idlePerToken(in, spans), nil
}

func idlePerToken(in Input, spans []swarm.Span) float64 {
	l := in.Model.Blocks
	dist := make([]float64, l+1)
	total := 0.0
	for c, d := range in.demand() {
		if d == 0 {
			continue
		}
		for b := range dist {
			dist[b] = math.Inf(1)
		}
		dist[0] = 0
		for e := 0; e < l; e++ { // boundaries in increasing order: a DAG
			if math.IsInf(dist[e], 1) {
				continue
			}
			for j, s := range spans {
				if s.Contains(e) {
					srv := in.Servers[j]
					dist[s.End] = min(dist[s.End], dist[e]+srv.RTT[c]+float64(s.End-e)*srv.Tau)
				}
			}
		}
		total += float64(d) * dist[l]
	}
	return total / float64(in.Sessions)
}
