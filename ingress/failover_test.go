package ingress_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/swarm"
)

// TestStreamFailsOverWithClientCaches: a block server of the chain shuts
// down mid-stream (it tells its sessions to fail over); the client replaces
// it by a spare covering its blocks and replays its client-side cache, and
// the stream continues on the same session to REFERENCE.md section 2's
// text, without a re-routing by the gateway.
func TestStreamFailsOverWithClientCaches(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	servers := map[string]*ingresstest.Server{}
	var urls []string
	for _, sp := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}, {Start: 2, End: 5}, {Start: 2, End: 4}} {
		s := ingresstest.StartServer(t, sp, nil)
		servers[s.URL] = s
		urls = append(urls, s.URL)
	}
	gw := ingresstest.Gateway(t, urls, nil, nil)
	sess, err := gw.Open(context.Background(), ingress.SessionRequest{Model: "stories260K", MaxLength: 200, API: "completions"})
	require.NoError(t, err)
	defer sess.Close()
	before := sess.Route()
	// The hop that processes block 2.
	var victim *ingresstest.Server
	for _, hop := range strings.Split(strings.TrimPrefix(before, "chain: "), " -> ") {
		url, span, _ := strings.Cut(hop, " ")
		if sp, err := swarm.ParseSpan(span); err == nil && sp.Contains(2) {
			victim = servers[url]
		}
	}
	require.NotNil(t, victim, before)

	var text strings.Builder
	n := 0
	res, err := sess.Generate(context.Background(), ingress.GenerateParams{MaxTokens: 200, Sampler: blocks.SamplerConfig{}}, func(s string) error {
		text.WriteString(s)
		n++
		if n == 50 {
			go victim.Srv.Shutdown(context.Background())
			<-victim.Srv.Draining() // from now on its steps are refused
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, want, text.String())
	require.Equal(t, 0, res.Retries, "the client failed over, the gateway did not re-route")
	require.NotEqual(t, before, sess.Route(), "the chain changed")
	require.NotContains(t, sess.Route(), victim.URL)
}
