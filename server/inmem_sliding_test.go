package server_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// slidingModelConfig is a gemma3 model whose sliding-window blocks hold
// fewer cache positions than its context: a 2-token window on blocks 0,
// 2 and 4 (pattern 2), so for sessions of its whole 72-token context they
// hold 2 + swarm.SlidingRewind = 66 positions and the global blocks 72.
// It is tiny (d_model 4, 2 heads of 2) to stay under servertest's inline
// work limit at that context.
func slidingModelConfig() synth.Config {
	c := servertest.ModelConfig()
	c.Arch, c.Dim, c.FFN, c.Heads, c.KVHeads, c.MaxSeqLen = synth.ArchGemma3, 4, 16, 2, 1, 72
	c.SlidingWindow, c.SlidingPattern = 2, 2
	return c
}

// TestInMemAdmissionSlidingWindow gives a gemma3 server over blocks [0, 4)
// the memory of its weights plus ten sessions' SpanCacheBytes (2 sliding
// blocks of 66 positions + 2 global of 72, per session) and requires it
// to admit exactly ten sessions of 72 tokens, each granted its
// SpanCacheBytes, and refuse the eleventh for lack of room. Counting every
// block at 72 positions (one s_c for all blocks) would admit nine. The
// server advertises the window, so routing counts the same ten sessions.
func TestInMemAdmissionSlidingWindow(t *testing.T) {
	require.Equal(t, 64, swarm.SlidingRewind, "the figures below")
	m := servertest.NewModel(t, slidingModelConfig())
	info := m.Info()
	span := swarm.Span{Start: 0, End: 4}
	const maxLength, sessions = 72, 10
	perSession := info.SpanCacheBytes(span, maxLength)
	require.Equal(t, info.CacheBytesPerToken*(66+72+66+72), perSession)
	require.Equal(t, int64(sessions-1), sessions*perSession/(4*info.CacheBytes(maxLength)), "one s_c for all blocks fits nine")
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		s := n.Start("gemma", span, func(c *server.Config) {
			c.MemoryBytes = int64(span.Len())*info.BlockBytes + sessions*perSession
			c.SessionIdleTimeout = 0
		})
		ep, err := api.ParseEndpoint(s.Addr)
		require.NoError(t, err)
		fc, err := n.Dial(t.Context(), ep, 0)
		require.NoError(t, err)
		p := newPeer(t, fc)
		got := s.Info()
		require.Equal(t, sessions*perSession, got.CacheBytesCapacity)
		require.Equal(t, []int{2, 2}, []int{got.SlidingWindow, got.SlidingPattern})
		for i := range sessions {
			sid := fmt.Sprintf("s%d", i)
			p.send(&wire.Open{SessionID: sid, Model: info.Name, Span: span, MaxLength: maxLength, DType: swarm.DTypeF32})
			g := expect[*wire.Granted](p)
			require.Equal(t, sid, g.SessionID)
			require.Equal(t, perSession, g.CacheBytes)
		}
		require.Zero(t, s.Info().CacheBytesFree)
		p.send(&wire.Open{SessionID: "one too many", Model: info.Name, Span: span, MaxLength: maxLength, DType: swarm.DTypeF32})
		e := expect[*wire.Error](p)
		require.Equal(t, wire.CodeTimeout, e.Code)
		require.Equal(t, "one too many", e.SessionID)
		// A client routes by what the server advertises: ten sessions of
		// four block caches.
		require.Equal(t, sessions*span.Len(), routing.FromServerInfo(got.ServerInfo, maxLength, 1, 0, 0, 0).CacheSlots)
	})
}
