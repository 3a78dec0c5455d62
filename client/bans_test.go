package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server/servertest"
)

// TestBansBackOff: bans double per consecutive failure (15 s, 30 s, 60 s:
// PETALS' base and factor) up to the cap, end on the fake clock, and a
// success starts the count over.
func TestBansBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := client.NewBans(15*time.Second, 50*time.Second)
		require.NoError(t, err)
		cause := errors.New("no answer")
		require.NoError(t, b.Banned("s"))
		for _, want := range []time.Duration{15 * time.Second, 30 * time.Second, 50 * time.Second, 50 * time.Second} {
			require.Equal(t, want, b.Fail("s", cause))
			err := b.Banned("s")
			require.ErrorIs(t, err, client.ErrBanned)
			require.ErrorIs(t, err, cause)
			time.Sleep(want - time.Nanosecond)
			require.Error(t, b.Banned("s"), "still banned just before the end")
			time.Sleep(time.Nanosecond)
			require.NoError(t, b.Banned("s"), "free at the end of the ban")
		}
		require.NoError(t, b.Banned("other"))

		// Six requests probed "c" at once and all timed out together: one
		// outage, one 15 s ban, not 15 s doubled five times (seen by
		// `swarm bench churn` on a SIGSTOPped server: an 8 min ban).
		for range 6 {
			require.Equal(t, 15*time.Second, b.Fail("c", cause))
		}
		time.Sleep(5 * time.Second)
		require.Equal(t, 10*time.Second, b.Fail("c", cause), "a late failure of the same outage: the ban stands")
		time.Sleep(10 * time.Second)
		require.NoError(t, b.Banned("c"))
		require.Equal(t, 30*time.Second, b.Fail("c", cause), "a failure after the ban ended is the next one")

		b.Succeed("s")
		require.Equal(t, 15*time.Second, b.Fail("s", cause), "the count starts over")

		_, err = client.NewBans(0, time.Second)
		require.ErrorIs(t, err, client.ErrBadOption)
		_, err = client.NewBans(time.Second, time.Millisecond)
		require.ErrorIs(t, err, client.ErrBadOption)
	})
}

// TestInMemBlackHoleIsProbedOncePerBan: a server that accepts and never
// answers costs the first Open one info timeout; it is then banned, so the
// Opens of the next 15 s cost nothing extra and never route to it; once
// the ban ends it is probed (and banned, for 30 s) again. Two clients
// sharing a ban list share what either learned.
func TestInMemBlackHoleIsProbedOncePerBan(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork(t, m)
		good := n.Start("good", m.Info().Blocks(), nil)
		hole := n.Start("hole", m.Info().Blocks(), nil)
		hole.Stall()
		bans, err := client.NewBans(client.DefaultBanBase, client.DefaultBanMax)
		require.NoError(t, err)
		c1 := memClient(t, m, n, client.WithBans(bans), client.WithInfoTimeout(time.Second))
		c2 := memClient(t, m, n, client.WithBans(bans), client.WithInfoTimeout(time.Second))
		open := func(c *client.Client) time.Duration {
			start := time.Now()
			sess, err := c.Open(t.Context(), 8)
			require.NoError(t, err)
			require.Equal(t, urls(good), chainURLs(sess.Chain()))
			require.NoError(t, sess.Close())
			return time.Since(start)
		}
		require.Equal(t, time.Second, open(c1), "the first Open waits out the hole's info timeout")
		require.Zero(t, open(c2), "banned: not probed")
		time.Sleep(14 * time.Second)
		require.Zero(t, open(c1), "still banned")
		time.Sleep(time.Second)
		require.Equal(t, time.Second, open(c2), "the 15 s ban ended: probed again")
		time.Sleep(29 * time.Second)
		require.Zero(t, open(c1), "banned for 30 s now")
		require.ErrorIs(t, bans.Banned(hole.URL), client.ErrBanned)
		require.NoError(t, bans.Banned(good.URL))
	})
}

// TestInMemRefusedDialBans: a server whose info answers but whose session
// connection is refused (it died after its last probe: `swarm bench churn`
// saw a proxy dial a SIGKILLed server again for every request for 2 s) is
// banned at the first refusal, so the next Open does not dial it again.
func TestInMemRefusedDialBans(t *testing.T) {
	m := servertest.NewModel(t, servertest.ModelConfig())
	n := servertest.NewNetwork(t, m)
	dead := n.Start("dead", m.Info().Blocks(), nil)
	bans, err := client.NewBans(client.DefaultBanBase, client.DefaultBanMax)
	require.NoError(t, err)
	var dials atomic.Int32
	refuse := func(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
		dials.Add(1)
		return nil, syscall.ECONNREFUSED
	}
	c, err := client.New(m.Head(), n.Addrs(), client.WithDialer(refuse), client.WithInfoFetcher(n.Info), client.WithBans(bans))
	require.NoError(t, err)
	_, err = c.Open(t.Context(), 8)
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, int32(1), dials.Load())
	require.ErrorIs(t, bans.Banned(dead.URL), client.ErrBanned)
	_, err = c.Open(t.Context(), 8)
	require.ErrorContains(t, err, "banned after failing")
	require.Equal(t, int32(1), dials.Load(), "a banned server is not dialled")
}
