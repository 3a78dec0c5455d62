package node

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/swarm"
)

// TestCandidates_FiltersAndEndpoints publishes servers in every state and
// of other models, and checks which ones a client gets and at which
// endpoint.
func TestCandidates_FiltersAndEndpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		reader := startMem(t, net, "client")
		ws := startMem(t, net, "ws")
		p2pOnly := startMem(t, net, "p2p")
		joining := startMem(t, net, "joining")
		down := startMem(t, net, "down")
		other := startMem(t, net, "other-model")
		eve := startMem(t, net, "eve")
		full := startMem(t, net, "full-range")
		m := stories()
		info := func(s swarm.Span, provider string, endpoints ...string) swarm.ServerInfo {
			return swarm.ServerInfo{Model: m.Name, ModelBlocks: 5, Span: s, Provider: provider, Endpoints: endpoints}
		}
		require.NoError(t, ws.reg.Publish(info(span(0, 2), "alice", "/ip4/127.0.0.1/tcp/1/p2p/"+ws.id, "ws://127.0.0.1:7001/v1/inference"), swarm.StateServing))
		require.NoError(t, p2pOnly.reg.Publish(info(span(2, 4), "alice", "/ip4/127.0.0.1/tcp/4001/p2p/"+p2pOnly.id, "/ip4/127.0.0.1/tcp/9/p2p/"+ws.id), swarm.StateServing))
		require.NoError(t, joining.reg.Publish(info(span(4, 5), "alice"), swarm.StateJoin))
		require.NoError(t, down.reg.Publish(info(span(4, 5), "alice"), swarm.StateDown))
		o := info(span(4, 5), "alice")
		o.Model = "other"
		require.NoError(t, other.reg.Publish(o, swarm.StateServing))
		require.NoError(t, eve.reg.Publish(info(span(3, 5), "eve"), swarm.StateServing))
		f := info(span(0, 5), "alice")
		f.FullRange = true
		require.NoError(t, full.reg.Publish(f, swarm.StateServing))
		synctest.Wait()

		all, err := NewCandidates(reader.reg, m)
		require.NoError(t, err)
		ids := func(c *Candidates) []string {
			var out []string
			for _, e := range c.Servers() {
				out = append(out, e.NodeID)
			}
			return out
		}
		require.ElementsMatch(t, []string{ws.id, p2pOnly.id, eve.id}, ids(all))
		eps, err := all.Endpoints(t.Context())
		require.NoError(t, err)
		require.ElementsMatch(t, []api.Endpoint{
			{Inference: "ws://127.0.0.1:7001/v1/inference", Info: "http://127.0.0.1:7001/v1/info"},
			api.P2PEndpoint(p2pOnly.id),
			api.P2PEndpoint(eve.id),
		}, eps)
		require.Empty(t, all.Uncovered())

		// The multiaddrs of a server are its own ones only.
		pid, err := peer.Decode(p2pOnly.id)
		require.NoError(t, err)
		addrs := all.Addrs(pid)
		require.Len(t, addrs, 1)
		require.Equal(t, "/ip4/127.0.0.1/tcp/4001", addrs[0].String())

		trusted, err := NewCandidates(reader.reg, m, WithProviders("alice"))
		require.NoError(t, err)
		require.ElementsMatch(t, []string{ws.id, p2pOnly.id}, ids(trusted))
		require.Equal(t, []swarm.Span{span(4, 5)}, trusted.Uncovered())

		// A wrong block count is another model.
		m6 := m
		m6.NBlocks = 6
		c6, err := NewCandidates(reader.reg, m6)
		require.NoError(t, err)
		require.Empty(t, c6.Servers())
		require.Equal(t, []swarm.Span{span(0, 6)}, c6.Uncovered())
	})
}

func TestNewCandidates_Errors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := startMem(t, memtransport.NewNetwork(), "c").reg
		_, err := NewCandidates(nil, stories())
		require.ErrorIs(t, err, ErrBadConfig)
		_, err = NewCandidates(reg, swarm.ModelInfo{Name: "m"})
		require.ErrorIs(t, err, ErrBadConfig)
		_, err = NewCandidates(reg, stories(), WithProviders())
		require.ErrorIs(t, err, ErrBadConfig)
	})
}

// TestWaitCovered waits for coverage as servers become SERVING, and reports
// the uncovered blocks when a server that covered them crashes and the
// wait runs out.
func TestWaitCovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		reader := startMem(t, net, "client")
		a, b := startMem(t, net, "a"), startMem(t, net, "b")
		m := stories()
		c, err := NewCandidates(reader.reg, m)
		require.NoError(t, err)
		require.NoError(t, a.reg.Publish(swarm.ServerInfo{Model: m.Name, ModelBlocks: 5, Span: span(0, 3)}, swarm.StateServing))
		require.NoError(t, b.reg.Publish(swarm.ServerInfo{Model: m.Name, ModelBlocks: 5, Span: span(3, 5)}, swarm.StateJoin))

		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- c.WaitCovered(t.Context()) }()
		time.Sleep(10 * time.Second) // fake clock: b is still loading
		synctest.Wait()
		require.Empty(t, done, "covered before b serves")
		require.NoError(t, b.reg.SetState(swarm.StateServing))
		synctest.Wait()
		require.NoError(t, <-done)
		require.Equal(t, 10*time.Second, time.Since(start), "returns on the registry event, not later")

		// b crashes: SUSPECTED after 3 s of silence, so blocks 3:5 are
		// uncovered again and a bounded wait fails naming them.
		b.crash(t)
		time.Sleep(5 * time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		err = c.WaitCovered(ctx)
		var ue *UncoveredError
		require.ErrorAs(t, err, &ue)
		require.ErrorIs(t, err, ErrUncovered)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, []swarm.Span{span(3, 5)}, ue.Uncovered)
		require.Equal(t, 1, ue.Routable)
		require.Contains(t, err.Error(), "no SERVING server of stories260K hosts blocks 3:5 (of 0:5; 1 SERVING servers of the model)")
	})
}

func TestUncoveredBlocks(t *testing.T) {
	tests := []struct {
		spans []swarm.Span
		want  []swarm.Span
	}{
		{nil, []swarm.Span{span(0, 5)}},
		{[]swarm.Span{span(0, 5)}, nil},
		{[]swarm.Span{span(3, 5), span(0, 2)}, []swarm.Span{span(2, 3)}},
		{[]swarm.Span{span(1, 2), span(1, 3)}, []swarm.Span{span(0, 1), span(3, 5)}},
		{[]swarm.Span{span(0, 4), span(2, 3)}, []swarm.Span{span(4, 5)}},
	}
	for _, tt := range tests {
		var entries []registry.Entry
		for _, s := range tt.spans {
			entries = append(entries, registry.Entry{Info: swarm.ServerInfo{Span: s}})
		}
		require.Equal(t, tt.want, uncovered(swarm.ModelInfo{NBlocks: 5}, entries), "%v", tt.spans)
	}
}
