package node

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
)

// Candidates lists the servers of one model from a registry replica. It
// implements client.Source: give it to client.New with ClientOptions. It is
// safe for concurrent use.
//
// A server is a candidate when its registry entry is routable (announced
// SERVING and not SUSPECTED by this replica; JOIN, DOWN and LEFT entries
// are left out), names the model with the same number of blocks, is not a
// full-range replica, and (with WithProviders) is run by an allowed
// provider (OpenTela's trusted-provider allowlist, paper 000 Sec. 3.3).
type Candidates struct {
	reg   *registry.Registry
	model swarm.ModelInfo
	allow map[string]bool // nil: every provider

	mu sync.Mutex
	// wsDownLocked are websocket URLs whose info probe failed: their
	// server is reached over its libp2p streams from then on.
	wsDownLocked map[string]bool
	// peerOfLocked maps the websocket URLs last listed to their peer id.
	peerOfLocked map[string]string
}

var _ client.Source = (*Candidates)(nil)

// CandidatesOption configures NewCandidates.
type CandidatesOption func(*Candidates) error

// WithProviders keeps only servers whose ServerInfo.Provider is one of
// names (OpenTela's trusted providers). At least one name is required.
func WithProviders(names ...string) CandidatesOption {
	return func(c *Candidates) error {
		if len(names) == 0 {
			return fmt.Errorf("%w: WithProviders: no provider", ErrBadConfig)
		}
		c.allow = map[string]bool{}
		for _, n := range names {
			c.allow[n] = true
		}
		return nil
	}
}

// NewCandidates returns the candidates for model (ModelInfo.Name and
// NBlocks identify its servers) read from reg.
func NewCandidates(reg *registry.Registry, model swarm.ModelInfo, opts ...CandidatesOption) (*Candidates, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry", ErrBadConfig)
	}
	if model.Name == "" || model.NBlocks <= 0 {
		return nil, fmt.Errorf("%w: model %q with %d blocks, want a name and >= 1 block", ErrBadConfig, model.Name, model.NBlocks)
	}
	c := &Candidates{reg: reg, model: model, wsDownLocked: map[string]bool{}, peerOfLocked: map[string]string{}}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// serves reports whether an entry advertises a span of c's model.
func (c *Candidates) serves(e registry.Entry) bool {
	in := e.Info
	return in.Model == c.model.Name && !in.FullRange &&
		(in.ModelBlocks == 0 || in.ModelBlocks == c.model.NBlocks) &&
		in.Span.Validate(c.model.NBlocks) == nil &&
		(c.allow == nil || c.allow[in.Provider])
}

// Servers returns the routable entries serving the model, sorted by node
// id.
func (c *Candidates) Servers() []registry.Entry {
	var out []registry.Entry
	for _, e := range c.reg.Snapshot() {
		if e.Routable() && c.serves(e) {
			out = append(out, e)
		}
	}
	return out
}

// Endpoints implements client.Source: one endpoint per routable server, its
// advertised websocket (ws:// or wss://) when it has one that answered,
// otherwise its libp2p streams (api.P2PEndpoint of its node id).
func (c *Candidates) Endpoints(context.Context) ([]api.Endpoint, error) {
	servers := c.Servers()
	c.mu.Lock()
	defer c.mu.Unlock()
	eps := make([]api.Endpoint, 0, len(servers))
	for _, e := range servers {
		ws, ok := websocketEndpoint(e.Info.Endpoints)
		if ok && !c.wsDownLocked[ws.Inference] {
			c.peerOfLocked[ws.Inference] = e.NodeID
			eps = append(eps, ws)
			continue
		}
		eps = append(eps, api.P2PEndpoint(e.NodeID))
	}
	return eps, nil
}

// websocketEndpoint returns the first ws:// or wss:// endpoint advertised.
func websocketEndpoint(endpoints []string) (api.Endpoint, bool) {
	for _, s := range endpoints {
		if !strings.HasPrefix(s, "ws://") && !strings.HasPrefix(s, "wss://") {
			continue
		}
		if ep, err := api.ParseEndpoint(s); err == nil {
			return ep, true
		}
	}
	return api.Endpoint{}, false
}

// Addrs returns the libp2p multiaddrs a server advertises in its registry
// entry (its endpoints that parse as multiaddrs, /p2p/PEERID stripped), for
// Transport.
func (c *Candidates) Addrs(id peer.ID) []ma.Multiaddr {
	e, ok := c.reg.Get(id.String())
	if !ok {
		return nil
	}
	var out []ma.Multiaddr
	for _, s := range e.Info.Endpoints {
		if !strings.HasPrefix(s, "/") {
			continue
		}
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue
		}
		info, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil || info.ID != id {
			continue
		}
		out = append(out, info.Addrs...)
	}
	return out
}

// ClientOptions returns the client.New options that make a client use
// these candidates over h: WithSource(c), and a dialer and info fetcher
// that reach libp2p://PEERID endpoints over the /swarm/inference/1 and
// /swarm/info/1 streams (Transport), and websocket endpoints over the
// websocket and HTTP — falling back to the server's libp2p streams, from
// then on, when its websocket info cannot be read (a server behind a NAT
// advertising an unreachable address).
func (c *Candidates) ClientOptions(h host.Host) []client.Option {
	t := NewTransport(h, c.Addrs)
	hc := &http.Client{}
	fetch := func(ctx context.Context, ep api.Endpoint) (api.Info, error) {
		if _, ok := ep.Peer(); ok {
			return t.FetchInfo(ctx, ep)
		}
		info, err := c.fetchVerified(ctx, hc, ep)
		if err == nil || ctx.Err() != nil {
			return info, err
		}
		id, ok := c.peerOf(ep.Inference)
		if !ok {
			return info, err
		}
		info, perr := t.FetchInfo(ctx, api.P2PEndpoint(id))
		if perr != nil {
			return api.Info{}, fmt.Errorf("%w (and over libp2p: %w)", err, perr)
		}
		c.markWebsocketDown(ep.Inference)
		return info, nil
	}
	dial := func(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
		if _, ok := ep.Peer(); ok {
			return t.Dial(ctx, ep, maxPayload)
		}
		if id, ok := c.peerOf(ep.Inference); ok && c.websocketDown(ep.Inference) {
			return t.Dial(ctx, api.P2PEndpoint(id), maxPayload)
		}
		return client.DialWebsocket(ctx, ep, maxPayload)
	}
	return []client.Option{client.WithSource(c), client.WithInfoFetcher(fetch), client.WithDialer(dial)}
}

func (c *Candidates) peerOf(url string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.peerOfLocked[url]
	return id, ok
}

func (c *Candidates) markWebsocketDown(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wsDownLocked[url] = true
}

func (c *Candidates) websocketDown(url string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wsDownLocked[url]
}

// Uncovered returns the blocks of the model that no routable server hosts,
// as maximal spans in increasing order (empty when every block is covered).
func (c *Candidates) Uncovered() []swarm.Span {
	return uncovered(c.model, c.Servers())
}

// uncovered returns the blocks of model no entry's span hosts.
func uncovered(model swarm.ModelInfo, entries []registry.Entry) []swarm.Span {
	spans := make([]swarm.Span, len(entries))
	for i, e := range entries {
		spans[i] = e.Info.Span
	}
	return swarm.Uncovered(spans, model.Blocks())
}

// UncoveredError says which blocks of a model no routable server hosts
// when WaitCovered gave up.
type UncoveredError struct {
	// Model is the model's name; Blocks its number of blocks L.
	Model  string
	Blocks int
	// Uncovered are the blocks no SERVING server hosts.
	Uncovered []swarm.Span
	// Routable is the number of routable servers of the model.
	Routable int
	// Err is why the wait ended (ctx.Err()).
	Err error
}

func (e *UncoveredError) Error() string {
	parts := make([]string, len(e.Uncovered))
	for i, s := range e.Uncovered {
		parts[i] = s.String()
	}
	return fmt.Sprintf("%v: no SERVING server of %s hosts blocks %s (of 0:%d; %d SERVING servers of the model): %v",
		ErrUncovered, e.Model, strings.Join(parts, ", "), e.Blocks, e.Routable, e.Err)
}

// Unwrap makes errors.Is(err, ErrUncovered) true, and exposes Err.
func (e *UncoveredError) Unwrap() []error { return []error{ErrUncovered, e.Err} }

// WaitCovered returns nil as soon as the routable servers of the model
// cover every block, re-checking on every registry change. When ctx ends
// first it returns an *UncoveredError naming the uncovered blocks.
func (c *Candidates) WaitCovered(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := c.reg.Watch(wctx) // before the first check: no change is missed
	for {
		servers := c.Servers()
		gaps := uncovered(c.model, servers)
		if len(gaps) == 0 {
			return nil
		}
		select {
		case _, ok := <-events:
			if ok {
				continue
			}
		case <-ctx.Done():
		}
		if ctx.Err() == nil {
			return fmt.Errorf("node: wait for coverage: %w", registry.ErrClosed)
		}
		return &UncoveredError{Model: c.model.Name, Blocks: c.model.NBlocks, Uncovered: gaps, Routable: len(servers), Err: ctx.Err()}
	}
}
