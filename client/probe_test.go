package client_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// synthHead writes a small synthesized model and loads its head.
func synthHead(t *testing.T) blocks.Head {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synth.WriteGGUF(path, synth.DefaultConfig()))
	m, err := blocks.Open(path)
	require.NoError(t, err)
	defer m.Close()
	h, err := m.LoadHead()
	require.NoError(t, err)
	return h
}

// TestProbeRoundIsBounded: one server that never answers its info
// document, and one that answers once and then hangs, cost a probe round
// the info timeout (2 s by default, on synctest's fake clock), not more;
// the first is left out with the deadline as its error, the second keeps
// its first answer. Sessions then route around the hung server.
func TestProbeRoundIsBounded(t *testing.T) {
	head := synthHead(t)
	model := head.Info()
	synctest.Test(t, func(t *testing.T) {
		served := func(name string, span swarm.Span) api.Info {
			mi := model
			return api.Info{State: api.StateServing, MaxLength: model.MaxSeqLen, ModelInfo: &mi, ServerInfo: swarm.ServerInfo{
				ID: name, Model: model.Name, Span: span, Tau: 1e-3, ProtocolVersion: swarm.ProtocolVersion}}
		}
		var mu sync.Mutex
		reads := map[string]int{}
		fetch := func(ctx context.Context, ep api.Endpoint) (api.Info, error) {
			host := ep.Inference[len("ws://"):len("ws://x")]
			mu.Lock()
			reads[host]++
			n := reads[host]
			mu.Unlock()
			switch {
			case host == "h", host == "o" && n > 1:
				<-ctx.Done() // hangs until the round's deadline
				return api.Info{}, ctx.Err()
			case host == "o":
				return served("o", model.Blocks()), nil
			}
			time.Sleep(time.Millisecond) // a loopback round trip
			return served(host, model.Blocks()), nil
		}
		c, err := client.New(head, []string{"h:1", "o:1", "f:1"}, client.WithInfoFetcher(fetch))
		require.NoError(t, err)
		start := time.Now()
		cands := c.Candidates(t.Context())
		require.Equal(t, client.DefaultInfoTimeout, time.Since(start), "the round ends at the info timeout")
		require.Len(t, cands, 3)
		require.ErrorIs(t, cands[0].Err, context.DeadlineExceeded, "the hung server is left out")
		require.NoError(t, cands[1].Err, "a server that answered once keeps its answer")
		require.Equal(t, time.Duration(0), cands[1].RTT)
		require.NoError(t, cands[2].Err)
		require.Equal(t, time.Millisecond, cands[2].RTT)

		plan, err := client.Route(client.RouteRequest{Model: model, Need: model.Blocks(), MaxLength: 16}, cands)
		require.NoError(t, err)
		require.NotEqual(t, "ws://h:1/v1/inference", plan.Hops[0].Candidate.Endpoint.Inference)
	})
}
