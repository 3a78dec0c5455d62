package ingress

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// TestChoose routes over one graph of block servers and replicas: the
// cheaper of a chain and a replica wins, allowlists and exclusions prune
// candidates, and a hybrid route (blocks, then a replica) is never chosen.
func TestChoose(t *testing.T) {
	model := swarm.ModelInfo{Name: "m", NBlocks: 4, BlockBytes: 1000, CacheBytesPerToken: 10}
	block := func(ep, provider string, start, end int, tau float64, rtt time.Duration) client.Candidate {
		return client.Candidate{Endpoint: api.Endpoint{Inference: ep}, RTT: rtt, Info: api.Info{State: api.StateServing,
			ServerInfo: swarm.ServerInfo{Model: "m", Span: swarm.Span{Start: start, End: end}, Tau: tau, Provider: provider}}}
	}
	replica := func(ep, provider string, tau float64, rtt time.Duration) client.Candidate {
		c := block(ep, provider, 0, 4, tau, rtt)
		c.Info.FullRange = true
		return c
	}
	fastChain := []client.Candidate{block("a", "alice", 0, 2, 0.001, time.Millisecond), block("b", "alice", 2, 4, 0.001, time.Millisecond)}
	slowChain := []client.Candidate{block("a", "alice", 0, 2, 0.001, 40*time.Millisecond), block("b", "alice", 2, 4, 0.001, 40*time.Millisecond)}
	tests := []struct {
		name    string
		cands   []client.Candidate
		allow   []string
		exclude map[string]error
		want    string // Plan.String(), or the error text
		err     bool
	}{
		// chain: 2 hops x (1 ms RTT + 2 x 1 ms) = 6 ms/token; replica 4 x 5 ms = 20 ms/token.
		{"chain cheaper", append(fastChain[:2:2], replica("r", "bob", 0.005, 50*time.Millisecond)), nil, nil, "chain: a 0:2 -> b 2:4", false},
		// chain: 2 x (40 + 2) = 84 ms/token; replica 4 x 5 ms + 50 ms/100 = 20.5 ms/token.
		{"replica cheaper", append(slowChain[:2:2], replica("r", "bob", 0.005, 50*time.Millisecond)), nil, nil, "replica: r 0:4", false},
		{"replica's provider not allowed", append(slowChain[:2:2], replica("r", "bob", 0.005, 50*time.Millisecond)), []string{"alice"}, nil, "chain: a 0:2 -> b 2:4", false},
		{"failed replica excluded", append(slowChain[:2:2], replica("r", "bob", 0.005, 50*time.Millisecond)), nil, map[string]error{"r": errors.New("HTTP 500")}, "chain: a 0:2 -> b 2:4", false},
		{"nothing allowed", append(slowChain[:2:2], replica("r", "bob", 0.005, 50*time.Millisecond)), []string{"carol"}, nil,
			`ingress: no route for model m: no allowed server hosts blocks 0:4 (left out: a: provider "alice" is not in the allowlist ["carol"]; b: provider "alice" is not in the allowlist ["carol"]; r: provider "bob" is not in the allowlist ["carol"])`, true},
		{"uncovered blocks", []client.Candidate{block("a", "", 0, 2, 0.001, time.Millisecond)}, nil, nil, "ingress: no route for model m: no allowed server hosts blocks 2:4", true},
		// The block a [0, 2) is fast, b [2, 4) very slow: WS-RR's graph has a
		// hybrid a -> r (r processing blocks 2:4) cheaper than both pure
		// routes; a replica takes text, so the cheaper pure route wins.
		{"no hybrid route", []client.Candidate{block("a", "", 0, 2, 0.0001, 0), block("b", "", 2, 4, 0.1, 0), replica("r", "", 0.02, 0)}, nil, nil, "replica: r 0:4", false},
		{"draining and unreachable left out", []client.Candidate{{Endpoint: api.Endpoint{Inference: "x"}, Info: api.Info{State: api.StateDraining, ServerInfo: swarm.ServerInfo{Span: swarm.Span{Start: 0, End: 4}}}}, fastChain[0], fastChain[1]}, nil, nil, "chain: a 0:2 -> b 2:4", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Choose(model, tt.cands, tt.allow, tt.exclude, 100)
			if tt.err {
				require.ErrorIs(t, err, ErrNoRoute)
				require.EqualError(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, p.String())
		})
	}
}

// TestParseEntry checks the PROVIDER=ADDRESS syntax of static sources.
func TestParseEntry(t *testing.T) {
	for _, tt := range []struct{ in, provider, addr string }{
		{"alice=ws://127.0.0.1:7001", "alice", "ws://127.0.0.1:7001"},
		{"127.0.0.1:7001", "", "127.0.0.1:7001"},
		{"ws://h:1/v1/inference?a=b", "", "ws://h:1/v1/inference?a=b"},
		{"acme-1=http://h:2", "acme-1", "http://h:2"},
		{"=http://h:2", "", "=http://h:2"},
	} {
		p, a := ParseEntry(tt.in)
		require.Equal(t, tt.provider, p, tt.in)
		require.Equal(t, tt.addr, a, tt.in)
	}
}
