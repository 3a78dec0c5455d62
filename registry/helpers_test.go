package registry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// member is one registry on an in-memory network.
type member struct {
	name string
	id   string
	tr   *memtransport.Transport
	reg  *registry.Registry
}

func start(t *testing.T, net *memtransport.Network, name string) *member {
	t.Helper()
	key := registrytest.Key(t, name)
	id := registrytest.ID(t, name)
	tr := net.Join(id)
	reg, err := registry.New(tr, key, registrytest.FakeClockConfig())
	require.NoError(t, err)
	return &member{name: name, id: id, tr: tr, reg: reg}
}

// crash stops a member without announcing LEFT.
func (m *member) crash(t *testing.T) {
	t.Helper()
	require.NoError(t, m.tr.Close())
	require.NoError(t, m.reg.Close())
}

func (m *member) publish(t *testing.T, model string, span swarm.Span, state swarm.LifecycleState) {
	t.Helper()
	require.NoError(t, m.reg.Publish(swarm.ServerInfo{Model: model, Span: span, ModelBlocks: 8, Tau: 0.01}, state))
}

// stateOf returns the effective state m shows for node id, or 0 if absent.
func (m *member) stateOf(id string) swarm.LifecycleState {
	e, ok := m.reg.Get(id)
	if !ok {
		return 0
	}
	return e.State
}

func closeAll(t *testing.T, ms ...*member) {
	t.Helper()
	for _, m := range ms {
		require.NoError(t, m.reg.Close())
		require.NoError(t, m.tr.Close())
	}
}

// sameView reports whether every member holds the same entries (node,
// session, version).
func sameView(ms ...*member) bool {
	key := func(m *member) []string {
		var out []string
		for _, e := range m.reg.Snapshot() {
			out = append(out, e.NodeID+"/"+e.Session+"/"+e.Announced.String()+"/"+time.Duration(e.Version).String())
		}
		return out
	}
	first := key(ms[0])
	for _, m := range ms[1:] {
		k := key(m)
		if len(k) != len(first) {
			return false
		}
		for i := range k {
			if k[i] != first[i] {
				return false
			}
		}
	}
	return true
}
