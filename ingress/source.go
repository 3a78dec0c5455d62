package ingress

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// Source lists the candidate servers of a model. The static source is a
// fixed list of addresses; a registry-backed source reads the signed CRDT
// registry (paper 000 Sec. 3.2 "Registry"). Implementations are safe for
// concurrent use.
type Source interface {
	// Candidates returns the block servers and replicas that serve the
	// model whose head is given, each with its advertised state and
	// measured RTT, unusable ones included with Err set. It probes block
	// servers with a client configured by opts (the Gateway passes its
	// shared ban list: client.WithBans).
	Candidates(ctx context.Context, head blocks.Head, opts ...client.Option) []client.Candidate
	// Client returns a client that opens sessions over the allowed block
	// servers: those given (usable, allowed, chosen by Candidates), and for
	// a source that tracks membership (the registry) also servers of the
	// allowed providers (nil allow: any) that join later, for failover.
	Client(head blocks.Head, allow []string, servers []client.Candidate, opts ...client.Option) (*client.Client, error)
}

// ProbeReplica reads a replica's info document at base ("http://HOST:PORT")
// twice through hc (the faster round trip is its RTT) and checks that it is
// a full-range replica of the model with this protocol version (Err says
// why not).
func ProbeReplica(ctx context.Context, hc *http.Client, base string, model swarm.ModelInfo) client.Candidate {
	ep, err := api.ReplicaEndpoint(base)
	if err != nil {
		return client.Candidate{Endpoint: api.Endpoint{Inference: base}, Err: err}
	}
	c := client.Probe(ctx, client.HTTPInfo(hc), ep, model)
	if c.Err == nil && !c.Info.FullRange {
		c.Err = fmt.Errorf("ingress: %s is not a full-range replica (its /v1/info says full_range false)", ep.Inference)
	}
	return c
}

// staticEntry is one address of a static source and the provider it is
// assigned on the command line ("" = what the server advertises).
type staticEntry struct {
	addr     string
	provider string
}

// Static is a Source over fixed lists of block servers and replicas (the
// `swarm proxy --servers ... --replicas ...` flags). It probes them on every
// call; the Gateway caches the result for its refresh interval.
type Static struct {
	servers  []staticEntry
	replicas []staticEntry
	http     *http.Client
	opts     []client.Option
}

// ParseEntry splits "PROVIDER=ADDRESS" into its parts; an address without
// "PROVIDER=" has provider "". A provider name is a non-empty run of
// letters, digits, '-', '_' and '.' before the first '='; an address
// itself never has '=' before its first ':' or '/'.
func ParseEntry(s string) (provider, addr string) {
	s = strings.TrimSpace(s)
	i := strings.IndexByte(s, '=')
	if i <= 0 || strings.ContainsAny(s[:i], ":/") {
		return "", s
	}
	return s[:i], s[i+1:]
}

// NewStatic returns a Static source over block servers ("host:port",
// "ws://host:port[/v1/inference]") and replicas ("http://host:port", the
// address `swarm serve --full-range` prints), each optionally prefixed with
// "PROVIDER=" to assign it a provider for allowlists (else the provider it
// advertises counts). clientOpts configure the probing of block servers
// (e.g. client.WithHTTPClient). Errors wrap ErrBadOption naming the bad
// address.
func NewStatic(servers, replicas []string, clientOpts ...client.Option) (*Static, error) {
	s := &Static{http: &http.Client{}, opts: clientOpts}
	for _, e := range servers {
		p, a := ParseEntry(e)
		if _, err := api.ParseEndpoint(a); err != nil {
			return nil, fmt.Errorf("%w: server %q: %w", ErrBadOption, e, err)
		}
		s.servers = append(s.servers, staticEntry{addr: a, provider: p})
	}
	for _, e := range replicas {
		p, a := ParseEntry(e)
		if _, err := api.ReplicaEndpoint(a); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
		}
		s.replicas = append(s.replicas, staticEntry{addr: strings.TrimSuffix(a, "/"), provider: p})
	}
	if len(s.servers)+len(s.replicas) == 0 {
		return nil, fmt.Errorf("%w: no block servers and no replicas", ErrBadOption)
	}
	return s, nil
}

// Candidates probes every block server (client.Client.Candidates: GET
// /v1/info twice, model and protocol checks) and every replica (GET
// /v1/info twice) concurrently.
func (s *Static) Candidates(ctx context.Context, head blocks.Head, opts ...client.Option) []client.Candidate {
	var out []client.Candidate
	var mu sync.Mutex
	var wg sync.WaitGroup
	if len(s.servers) > 0 {
		wg.Go(func() {
			addrs := make([]string, len(s.servers))
			for i, e := range s.servers {
				addrs[i] = e.addr
			}
			cands := blockCandidates(ctx, head, addrs, append(slices.Clone(s.opts), opts...))
			for i := range cands {
				if p := s.servers[i].provider; p != "" {
					cands[i].Info.Provider = p
				}
			}
			mu.Lock()
			out = append(out, cands...)
			mu.Unlock()
		})
	}
	reps := make([]client.Candidate, len(s.replicas))
	for i, e := range s.replicas {
		wg.Go(func() {
			reps[i] = ProbeReplica(ctx, s.http, e.addr, head.Info())
			if e.provider != "" {
				reps[i].Info.Provider = e.provider
			}
		})
	}
	wg.Wait()
	return append(out, reps...)
}

// blockCandidates probes block servers through the client package, which
// owns the checks of a block server's model and protocol.
func blockCandidates(ctx context.Context, head blocks.Head, addrs []string, opts []client.Option) []client.Candidate {
	c, err := client.New(head, addrs, opts...)
	if err != nil {
		out := make([]client.Candidate, len(addrs))
		for i, a := range addrs {
			out[i] = client.Candidate{Endpoint: api.Endpoint{Inference: a}, Err: err}
		}
		return out
	}
	return c.Candidates(ctx)
}

// Client returns a client over the given block servers.
func (s *Static) Client(head blocks.Head, _ []string, servers []client.Candidate, opts ...client.Option) (*client.Client, error) {
	urls := make([]string, len(servers))
	for i, c := range servers {
		urls[i] = c.Endpoint.Inference
	}
	return client.New(head, urls, append(slices.Clone(s.opts), opts...)...)
}
