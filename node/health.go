package node

import (
	"fmt"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

var _ client.HealthSource = (*Candidates)(nil)

// Changed implements client.HealthSource: closed at the registry's next
// change (registry.Registry.Changed).
func (c *Candidates) Changed() <-chan struct{} { return c.reg.Changed() }

// Health implements client.HealthSource: nil while the server at ep is
// routable in the registry (SERVING, not SUSPECTED by this replica) or is
// draining the sessions open on it before a span move (JOIN with
// Draining), else its state. A server the registry never listed (one given to the client
// directly) is healthy as far as the registry knows.
func (c *Candidates) Health(ep api.Endpoint) error {
	id, ok := ep.Peer()
	if !ok {
		if id, ok = c.peerOf(ep.Inference); !ok {
			if id, ok = c.advertiser(ep.Inference); !ok {
				return nil
			}
		}
	}
	e, ok := c.reg.Get(id)
	if !ok {
		return fmt.Errorf("node %s is no longer in the registry", id)
	}
	if !e.Routable() && !drainingForMove(e) {
		return fmt.Errorf("the registry shows node %s %s", id, e.State)
	}
	return nil
}

// drainingForMove reports whether e is a server draining its old span
// before it loads a new one (JOIN with Draining, see swarm.ServerInfo):
// it takes no new session, but the sessions open on it keep running.
func drainingForMove(e registry.Entry) bool {
	return e.State == swarm.StateJoin && !e.Info.Draining.Empty()
}

// advertiser finds the node whose registry entry advertises the websocket
// url (a client given its route by an ingress never listed Endpoints) and
// remembers it.
func (c *Candidates) advertiser(url string) (string, bool) {
	for _, e := range c.reg.Snapshot() {
		if ws, ok := websocketEndpoint(e.Info.Endpoints); ok && ws.Inference == url {
			c.mu.Lock()
			c.peerOfLocked[url] = e.NodeID
			c.mu.Unlock()
			return e.NodeID, true
		}
	}
	return "", false
}
