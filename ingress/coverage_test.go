package ingress_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/swarm"
)

// joiningSource is a static source whose server list grows (the twin of a
// registry where a server joins): Candidates and Client use the servers
// added so far.
type joiningSource struct {
	mu      sync.Mutex
	servers []string
}

func (s *joiningSource) add(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers = append(s.servers, url)
}

func (s *joiningSource) static() ingress.Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, err := ingress.NewStatic(s.servers, nil)
	if err != nil {
		panic(err)
	}
	return src
}

func (s *joiningSource) Candidates(ctx context.Context, head blocks.Head, opts ...client.Option) []client.Candidate {
	return s.static().Candidates(ctx, head, opts...)
}

func (s *joiningSource) Client(head blocks.Head, allow []string, servers []client.Candidate, opts ...client.Option) (*client.Client, error) {
	return s.static().Client(head, allow, servers, opts...)
}

// TestCoverageWait: a request arriving while blocks 4:5 have no server
// waits (probing again) for coverage instead of failing at once; the
// server that joins 700 ms later serves it, and the text is REFERENCE.md's.
// Without a server the request fails with ErrNoRoute after the wait, and
// with CoverageWait 0 at once.
func TestCoverageWait(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	src := &joiningSource{}
	for _, sp := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}} {
		src.add(ingresstest.StartServer(t, sp, nil).URL)
	}
	late := ingresstest.StartServer(t, swarm.Span{Start: 4, End: 5}, nil).URL
	head := ingresstest.Head(t)
	gateway := func(wait time.Duration) *ingress.Gateway {
		cfg := ingress.DefaultConfig()
		cfg.Models = []ingress.Model{{Name: head.Info().Name, Head: head}}
		cfg.Source, cfg.CoverageWait = src, wait
		gw, err := ingress.New(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { gw.Close() })
		return gw
	}
	req := ingress.Request{Model: "stories260K", MaxTokens: 200, Sampler: blocks.SamplerConfig{}, API: "completions"}
	discard := func(string) error { return nil }

	start := time.Now()
	_, err := gateway(0).Generate(context.Background(), req, discard)
	require.ErrorIs(t, err, ingress.ErrNoRoute)
	_, err = gateway(500*time.Millisecond).Generate(context.Background(), req, discard)
	require.ErrorIs(t, err, ingress.ErrNoRoute)
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "the second request waited")

	gw := gateway(time.Minute)
	joined := time.AfterFunc(700*time.Millisecond, func() { src.add(late) })
	defer joined.Stop()
	var got strings.Builder
	res, err := gw.Generate(context.Background(), req, func(s string) error { got.WriteString(s); return nil })
	require.NoError(t, err)
	require.Equal(t, want, got.String())
	require.Equal(t, "chain", res.RouteKind)
}
