package node

import (
	"fmt"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
)

var _ client.HealthSource = (*Candidates)(nil)

// Changed implements client.HealthSource: closed at the registry's next
// change (registry.Registry.Changed).
func (c *Candidates) Changed() <-chan struct{} { return c.reg.Changed() }

// Health implements client.HealthSource: nil while the server at ep is
// routable in the registry (SERVING, not SUSPECTED by this replica), else
// its state. A server the registry never listed (one given to the client
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
	if !e.Routable() {
		return fmt.Errorf("the registry shows node %s %s", id, e.State)
	}
	return nil
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
