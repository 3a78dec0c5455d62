package registry_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/record"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/registry/memtransport"
	"github.com/swarmllm/swarm/registry/registrytest"
	"github.com/swarmllm/swarm/swarm"
)

// forgedBody mimics the registry's signed payload independently of the
// package's encoder: same signature domain, payload type and JSON fields.
type forgedBody struct {
	NodeID      string               `json:"node_id"`
	Incarnation uint64               `json:"incarnation"`
	Session     string               `json:"session"`
	State       swarm.LifecycleState `json:"state"`
	Version     uint64               `json:"version"`
	HeartbeatMs int64                `json:"heartbeat_ms"`
	Info        swarm.ServerInfo     `json:"info"`
}

func (*forgedBody) Domain() string                   { return "swarm-registry-entry" }
func (*forgedBody) Codec() []byte                    { return []byte("/swarm/registry/entry/1") }
func (b *forgedBody) MarshalRecord() ([]byte, error) { return json.Marshal(b) }
func (b *forgedBody) UnmarshalRecord(d []byte) error { return json.Unmarshal(d, b) }

// TestForgery_RejectedFromGossipAndAntiEntropy has a rogue endpoint, holding
// its own valid key, push an entry for victim a (a bigger incarnation, a
// different span) signed with the rogue key, by broadcast and by exchange.
// Nobody may accept it. The same body signed by a's key is accepted, which
// proves the rogue path would have changed the map.
func TestForgery_RejectedFromGossipAndAntiEntropy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := memtransport.NewNetwork()
		a, b := start(t, net, "a"), start(t, net, "b")
		defer closeAll(t, a, b)
		a.publish(t, "m", swarm.Span{Start: 0, End: 1}, swarm.StateServing)
		synctest.Wait()

		body := &forgedBody{
			NodeID: a.id, Incarnation: 1 << 62, Session: "forged", State: swarm.StateServing, Version: 1,
			HeartbeatMs: time.Now().UnixMilli(),
			Info:        swarm.ServerInfo{ID: a.id, Model: "m", Span: swarm.Span{Start: 0, End: 8}},
		}
		seal := func(name string) []byte {
			env, err := record.Seal(body, registrytest.Key(t, name))
			require.NoError(t, err)
			data, err := env.Marshal()
			require.NoError(t, err)
			return data
		}
		forged := seal("rogue")
		rogue := net.Join(registrytest.ID(t, "rogue"))
		defer rogue.Close()
		require.NoError(t, rogue.Broadcast(t.Context(), forged))
		state, err := json.Marshal(map[string][][]byte{"entries": {forged}})
		require.NoError(t, err)
		_, err = rogue.Exchange(t.Context(), b.id, state)
		require.NoError(t, err)
		synctest.Wait()
		for _, m := range []*member{a, b} {
			e, _ := m.reg.Get(a.id)
			require.NotEqual(t, "forged", e.Session, "%s accepted a forgery", m.name)
			require.Equal(t, swarm.Span{Start: 0, End: 1}, e.Info.Span)
		}

		// Control: the victim's own signature on the same body is accepted.
		_, err = rogue.Exchange(t.Context(), b.id, func() []byte {
			s, err := json.Marshal(map[string][][]byte{"entries": {seal("a")}})
			require.NoError(t, err)
			return s
		}())
		require.NoError(t, err)
		e, _ := b.reg.Get(a.id)
		require.Equal(t, "forged", e.Session)
	})
}
