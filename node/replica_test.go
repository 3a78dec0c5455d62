package node

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/swarm"
)

// fakeReplica is a replica whose engine health the test flips.
type fakeReplica struct {
	mu      sync.Mutex
	state   string
	changed chan struct{}
}

func (f *fakeReplica) Info() api.Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	return api.Info{State: f.state, ServerInfo: swarm.ServerInfo{
		ID: "ignored", Model: "stories260K", Span: span(0, 5), ModelBlocks: 5, FullRange: true, Tau: 0.001, Provider: "acme",
	}}
}

func (f *fakeReplica) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeReplica) set(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
	close(f.changed)
	f.changed = make(chan struct{})
}

// TestPublishReplica: a replica's entry is SERVING under the registry's
// node id with its API base as the one endpoint, DOWN while its engine is
// unhealthy, SERVING again when it recovers, and LEFT after stop.
func TestPublishReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		pub := startMem(t, net, "replica")
		reader := startMem(t, net, "reader")
		rep := &fakeReplica{state: api.StateServing, changed: make(chan struct{})}
		stop, err := PublishReplica(t.Context(), pub.reg, rep, "http://127.0.0.1:8080", nil)
		require.NoError(t, err)

		seen := func() (swarm.LifecycleState, swarm.ServerInfo) {
			synctest.Wait()
			e, ok := reader.reg.Get(pub.id)
			require.True(t, ok, "the reader has the replica's entry")
			return e.Announced, e.Info
		}
		st, info := seen()
		require.Equal(t, swarm.StateServing, st)
		require.Equal(t, pub.id, info.ID)
		require.Equal(t, []string{"http://127.0.0.1:8080"}, info.Endpoints)
		require.True(t, info.FullRange)
		require.Equal(t, "acme", info.Provider)

		rep.set(api.StateDraining)
		st, _ = seen()
		require.Equal(t, swarm.StateDown, st)
		rep.set(api.StateServing)
		st, _ = seen()
		require.Equal(t, swarm.StateServing, st)

		stop()
		st, _ = seen()
		require.Equal(t, swarm.StateLeft, st)
	})
}
