package client_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/servertest"
)

// TestInMemIdleExpiryReopensOnTheSameServers: a client that pauses longer
// than the servers' idle timeout finds its sessions expired; it reopens each
// hop on the same (healthy, not excluded) server, replays the hop's history
// there, and the tokens and the caches equal a local run's.
func TestInMemIdleExpiryReopensOnTheSameServers(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	const tokens, at = 20, 7
	want := localGenerate(t, m, tokens)
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		idle := func(c *server.Config) { c.SessionIdleTimeout = 15 * time.Second }
		fleet := []*servertest.Server{n.Start("s0", spanOf(0, 3), idle), n.Start("s1", spanOf(3, 6), idle)}
		sess := memOpen(t, m, n, tokens+1, fleet)
		got := memGenerate(t, m, sess, tokens, at, func() { time.Sleep(20 * time.Second) })
		require.Equal(t, want.tokens, ids(got))
		require.Equal(t, want.next, nextStep(t, m, sess, want.tokens), "the replayed caches hold exactly the local ones")

		st := sess.Stats()
		require.Equal(t, urls(fleet...), chainURLs(st.Hops), "the same servers again")
		require.Len(t, st.Replaced, 2, "both hops expired")
		for _, r := range st.Replaced {
			require.Contains(t, r.Failure, "SessionExpired")
		}
		require.Equal(t, at+1, st.Hops[0].Replayed)
		require.Equal(t, at+1, st.Hops[1].Replayed)
	})
}
