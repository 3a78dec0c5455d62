package p2p

import (
	"context"
	"log/slog"
	"math/rand"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/discovery/backoff"
	madns "github.com/multiformats/go-multiaddr-dns"
	"github.com/stretchr/testify/require"
)

func noJitterBackoff() backoff.BackoffStrategy {
	return backoff.NewExponentialBackoff(time.Second, 10*time.Second, backoff.NoJitter, time.Second, 2, 0, rand.NewSource(1))()
}

// TestRetryWithBackoff_ExponentialPauses checks the pauses between bootstrap
// rounds on a fake clock: 1 s, 2 s, 4 s, 8 s, then capped at 10 s.
func TestRetryWithBackoff_ExponentialPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := retryWithBackoff(t.Context(), noJitterBackoff(), func(context.Context) bool {
			at = append(at, time.Since(start))
			return len(at) == 7
		})
		require.NoError(t, err)
		s := time.Second
		require.Equal(t, []time.Duration{0, 1 * s, 3 * s, 7 * s, 15 * s, 25 * s, 35 * s}, at)
	})
}

// TestRetryWithBackoff_ResetAfterSuccess checks that a strategy reused after
// a success starts again from the shortest pause.
func TestRetryWithBackoff_ResetAfterSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := noJitterBackoff()
		fails := 3
		attempt := func(context.Context) bool { fails--; return fails < 0 }
		require.NoError(t, retryWithBackoff(t.Context(), b, attempt))
		fails = 1
		start := time.Now()
		require.NoError(t, retryWithBackoff(t.Context(), b, attempt))
		require.Equal(t, time.Second, time.Since(start))
	})
}

// TestRetryWithBackoff_CancelDuringPause checks that cancelling the context
// ends the loop during a pause, without waiting for the pause to elapse.
func TestRetryWithBackoff_CancelDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		calls := 0
		go func() {
			done <- retryWithBackoff(ctx, noJitterBackoff(), func(context.Context) bool { calls++; return false })
		}()
		time.Sleep(2500 * time.Millisecond) // fake clock: lands inside the 2 s pause after the second attempt
		synctest.Wait()
		require.Equal(t, 2, calls)
		start := time.Now()
		cancel()
		err := <-done
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, time.Duration(0), time.Since(start))
		require.Equal(t, 2, calls)
	})
}

// logRecords is a slog handler sending every record's level and message
// to a channel (dropping them when it is full).
type logRecords chan slog.Record

func (c logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (c logRecords) Handle(_ context.Context, r slog.Record) error {
	select {
	case c <- r:
	default:
	}
	return nil
}
func (c logRecords) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c logRecords) WithGroup(string) slog.Handler      { return c }

// TestNode_BootstrapDNSAddr: a --bootstrap /dnsaddr/DOMAIN address without
// a peer id is resolved through the _dnsaddr.DOMAIN TXT records (a mock
// resolver here) and the node joins the peer they name.
func TestNode_BootstrapDNSAddr(t *testing.T) {
	boot := startNode(t, nil)
	mock := &madns.MockResolver{TXT: map[string][]string{"_dnsaddr.boot.swarm.test": {"dnsaddr=" + addrStrings(boot)[0]}}}
	r, err := madns.NewResolver(madns.WithDefaultResolver(mock))
	require.NoError(t, err)
	n := startNode(t, func(c *Config) { c.Bootstrap = []string{"/dnsaddr/boot.swarm.test"} }, WithDNSResolver(r))
	waitReady(t, n)
	require.Equal(t, network.Connected, n.Host().Network().Connectedness(boot.ID()))

	peers, err := Config{Bootstrap: []string{"/dnsaddr/boot.swarm.test"}}.BootstrapPeers()
	require.NoError(t, err)
	require.Empty(t, peers, "a /dnsaddr address without an id is resolved when dialled")
	_, err = Config{Bootstrap: []string{"/dns4/boot.swarm.test/tcp/4001"}}.BootstrapPeers()
	require.ErrorContains(t, err, "or be /dnsaddr/DOMAIN")
}

// TestNode_BootstrapUnreachableWarns: a bootstrap peer that stays
// unreachable (a closed port; a /dnsaddr name with no records) gets a
// WARN with advice, once, rather than silent retries.
func TestNode_BootstrapUnreachableWarns(t *testing.T) {
	dead := startNode(t, nil)
	deadAddr := addrStrings(dead)[0]
	require.NoError(t, dead.Close())
	r, err := madns.NewResolver(madns.WithDefaultResolver(&madns.MockResolver{}))
	require.NoError(t, err)
	logs := make(logRecords, 256)
	startNode(t, func(c *Config) { c.Bootstrap = []string{deadAddr, "/dnsaddr/nothing.swarm.test"} },
		WithLogger(slog.New(logs)), WithBootstrapWarnAfter(0), WithDNSResolver(r))
	warned := map[string]int{}
	deadline := time.After(testTimeout)
	for warned[dead.ID().String()] == 0 || warned["/dnsaddr/nothing.swarm.test"] == 0 {
		select {
		case rec := <-logs:
			if rec.Level != slog.LevelWarn {
				continue
			}
			require.Contains(t, rec.Message, "bootstrap peer unreachable for a long time")
			require.Contains(t, rec.Message, "swarm identity")
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == "peer" {
					warned[a.Value.String()]++
				}
				return true
			})
		case <-deadline:
			t.Fatalf("no warning for both unreachable bootstrap peers: %v", warned)
		}
	}
	require.Equal(t, map[string]int{dead.ID().String(): 1, "/dnsaddr/nothing.swarm.test": 1}, warned)
}
