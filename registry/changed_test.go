package registry_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// TestChanged: the channel Changed returns is closed by the next change
// (here: a crashed server turning SUSPECTED, on the fake clock exactly
// when Watch reports it), and not before; a fresh channel waits for the
// change after that.
func TestChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()
		require.Equal(t, swarm.StateServing, b.stateOf(a.id))
		a.crash(t)
		synctest.Wait()
		changed := b.reg.Changed()
		select {
		case <-changed:
			t.Fatal("closed before any change")
		default:
		}
		start := time.Now()
		<-changed // no bound needed: were it never closed, the bubble would deadlock and fail
		require.Equal(t, swarm.StateSuspected, b.stateOf(a.id))
		cfg := registrytest.FakeClockConfig()
		require.LessOrEqual(t, time.Since(start), cfg.SuspectAfter+cfg.SuspectAfter/8)
		next := b.reg.Changed()
		require.NotEqual(t, changed, next, "a new channel for the next change")
		select {
		case <-next:
			t.Fatal("the new channel is closed before the next change")
		default:
		}
	})
}
