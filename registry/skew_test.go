package registry_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestClockSkewIsReported: with --max-clock-skew 500 ms, a server whose
// clock runs 5 s ahead has its entries refused and one 5 s behind shows
// SUSPECTED at the observer; neither is silent: the observer logs one WARN
// for each (not one per heartbeat) naming the node and the offset, and
// ClockOffsets reports both offsets; a server with a true clock is
// SERVING, with an offset of 0 (no gossip delay on the fake clock).
func TestClockSkewIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		var logs testenv.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		join := func(name string, opts ...registry.Option) *member {
			tr := net.Join(registrytest.ID(t, name))
			reg, err := registry.New(tr, registrytest.Key(t, name), registrytest.FakeClockConfig(), opts...)
			require.NoError(t, err)
			return &member{name: name, id: registrytest.ID(t, name), tr: tr, reg: reg}
		}
		skewed := func(d time.Duration) registry.Option {
			return registry.WithClock(func() time.Time { return time.Now().Add(d) })
		}
		observer := join("observer", registry.WithLogger(logger))
		good, ahead, behind := join("good"), join("ahead", skewed(5*time.Second)), join("behind", skewed(-5*time.Second))
		defer closeAll(t, observer, good, ahead, behind)
		for _, m := range []*member{good, ahead, behind} {
			m.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		}
		time.Sleep(10 * time.Second) // ten heartbeats each
		synctest.Wait()

		require.Equal(t, swarm.StateServing, observer.stateOf(good.id))
		require.Zero(t, observer.stateOf(ahead.id), "refused: not in the replica")
		require.Equal(t, swarm.StateSuspected, observer.stateOf(behind.id))
		off := observer.reg.ClockOffsets()
		require.Equal(t, time.Duration(0), off[good.id])
		require.Equal(t, 5*time.Second, off[ahead.id])
		require.Equal(t, -5*time.Second, off[behind.id])

		out := logs.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "one warning per skewed node, not one per heartbeat:\n%s", out)
		require.Contains(t, out, "refusing a node's entries: its clock runs ahead")
		require.Contains(t, out, "node="+ahead.id+" offset=5s")
		require.Contains(t, out, "it shows SUSPECTED here")
		require.Contains(t, out, "node="+behind.id+" offset=-5s")
	})
}
