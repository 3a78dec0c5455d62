package ingress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/swarm"
)

// Candidate is one server that may serve a model: a block server (a span of
// blocks; takes hidden states over the session wire protocol) or a
// full-range replica (span [0, L) of an OpenAI-compatible engine; takes
// text).
type Candidate struct {
	// Endpoint is where the server is reached: ws://HOST:PORT/v1/inference
	// for a block server; http://HOST:PORT, the base of its OpenAI-compatible
	// API (/v1/completions), for a replica.
	Endpoint string
	// Info is what the server advertises (valid when Err is nil).
	// Info.FullRange marks a replica; Info.Provider is matched against the
	// request's trusted-provider allowlist.
	Info swarm.ServerInfo
	// State is api.StateServing or api.StateDraining.
	State string
	// BackendModel is the model id a replica's engine expects in the
	// "model" field of its requests (from its /v1/models); empty for block
	// servers.
	BackendModel string
	// MaxLength is the longest session in tokens the server accepts; 0 if
	// unknown.
	MaxLength int
	// RTT is the round trip of the server's GET /v1/info: the estimate of
	// t_cj (paper 003 eq. 1) before any step was timed.
	RTT time.Duration
	// Err says why the server cannot be used now (unreachable, another
	// model, another protocol version); nil if usable.
	Err error
}

// Usable reports whether the candidate can take requests now.
func (c Candidate) Usable() bool { return c.Err == nil && c.State == api.StateServing }

// Source lists the candidate servers of a model. The static source is a
// fixed list of addresses; a registry-backed source reads the signed CRDT
// registry (paper 000 Sec. 3.2 "Registry"). Implementations are safe for
// concurrent use.
type Source interface {
	// Candidates returns the block servers and replicas that serve the
	// model whose head is given, each with its advertised state and
	// measured RTT, unusable ones included with Err set.
	Candidates(ctx context.Context, head blocks.Head) []Candidate
	// Client returns a client that opens sessions over the allowed block
	// servers: those given (usable, allowed, chosen by Candidates), and for
	// a source that tracks membership (the registry) also servers of the
	// allowed providers (nil allow: any) that join later, for failover.
	Client(head blocks.Head, allow []string, servers []Candidate, opts ...client.Option) (*client.Client, error)
}

// FromClient converts the client package's view of block servers.
func FromClient(cands []client.Candidate) []Candidate {
	out := make([]Candidate, len(cands))
	for i, cc := range cands {
		out[i] = Candidate{Endpoint: cc.Endpoint.Inference, Info: cc.Info.ServerInfo, State: cc.Info.State,
			MaxLength: cc.Info.MaxLength, RTT: cc.RTT, Err: cc.Err}
	}
	return out
}

// ProbeReplica reads a replica's GET /v1/info (twice; the faster round trip
// is its RTT) and checks that it is a full-range replica of the model with
// this protocol version (Err says why not).
func ProbeReplica(ctx context.Context, hc *http.Client, base string, model swarm.ModelInfo) Candidate {
	return probeReplica(ctx, hc, client.DefaultInfoTimeout, strings.TrimSuffix(base, "/"), model)
}

// ReplicaInfo is the JSON document a full-range replica answers at GET
// /v1/info (server/fullrange writes it): the api.Info of a server whose
// FullRange is true and whose Span is [0, L), plus the engine's model id.
type ReplicaInfo struct {
	api.Info
	// BackendModel is the engine's own model id (from its /v1/models).
	BackendModel string `json:"backend_model"`
	// Backend names the engine's URL, for operators (it may be reachable
	// only from the replica's host).
	Backend string `json:"backend,omitempty"`
	// ModelInfo describes the model when the replica knows it; it shadows
	// api.Info's (absent when unknown).
	ModelInfo *swarm.ModelInfo `json:"model_info,omitempty"`
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
	timeout  time.Duration
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
	s := &Static{http: &http.Client{}, timeout: client.DefaultInfoTimeout, opts: clientOpts}
	for _, e := range servers {
		p, a := ParseEntry(e)
		if _, err := api.ParseEndpoint(a); err != nil {
			return nil, fmt.Errorf("%w: server %q: %w", ErrBadOption, e, err)
		}
		s.servers = append(s.servers, staticEntry{addr: a, provider: p})
	}
	for _, e := range replicas {
		p, a := ParseEntry(e)
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: replica %q: want http://HOST:PORT (the address `swarm serve --full-range` prints)", ErrBadOption, e)
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
func (s *Static) Candidates(ctx context.Context, head blocks.Head) []Candidate {
	var out []Candidate
	var mu sync.Mutex
	var wg sync.WaitGroup
	if len(s.servers) > 0 {
		wg.Go(func() {
			addrs := make([]string, len(s.servers))
			for i, e := range s.servers {
				addrs[i] = e.addr
			}
			cands := blockCandidates(ctx, head, addrs, s.opts)
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
	reps := make([]Candidate, len(s.replicas))
	for i, e := range s.replicas {
		wg.Go(func() {
			reps[i] = probeReplica(ctx, s.http, s.timeout, e.addr, head.Info())
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
func blockCandidates(ctx context.Context, head blocks.Head, addrs []string, opts []client.Option) []Candidate {
	c, err := client.New(head, addrs, opts...)
	if err != nil {
		out := make([]Candidate, len(addrs))
		for i, a := range addrs {
			out[i] = Candidate{Endpoint: a, Err: err}
		}
		return out
	}
	return FromClient(c.Candidates(ctx))
}

// Client returns a client over the given block servers.
func (s *Static) Client(head blocks.Head, _ []string, servers []Candidate, opts ...client.Option) (*client.Client, error) {
	urls := make([]string, len(servers))
	for i, c := range servers {
		urls[i] = c.Endpoint
	}
	return client.New(head, urls, append(slices.Clone(s.opts), opts...)...)
}

// probeReplica reads a replica's /v1/info twice and keeps the faster round
// trip as its RTT.
func probeReplica(ctx context.Context, hc *http.Client, timeout time.Duration, base string, model swarm.ModelInfo) Candidate {
	c := Candidate{Endpoint: base}
	var best time.Duration
	for i := range 2 {
		info, rtt, err := fetchReplicaInfo(ctx, hc, timeout, base)
		if err != nil {
			c.Err = err
			return c
		}
		if i == 0 || rtt < best {
			best = rtt
		}
		c.Info, c.State, c.BackendModel, c.MaxLength = info.ServerInfo, info.State, info.BackendModel, info.MaxLength
	}
	c.RTT = best
	switch {
	case !c.Info.FullRange:
		c.Err = fmt.Errorf("ingress: %s is not a full-range replica (its /v1/info says full_range false)", base)
	case c.Info.Model != model.Name:
		c.Err = fmt.Errorf("ingress: replica %s serves model %q, not %q", base, c.Info.Model, model.Name)
	case c.Info.ProtocolVersion != swarm.ProtocolVersion:
		c.Err = fmt.Errorf("ingress: replica %s speaks protocol version %d, this ingress %d", base, c.Info.ProtocolVersion, swarm.ProtocolVersion)
	}
	return c
}

// fetchReplicaInfo does one GET BASE/v1/info.
func fetchReplicaInfo(ctx context.Context, hc *http.Client, timeout time.Duration, base string) (ReplicaInfo, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.InfoPath, nil)
	if err != nil {
		return ReplicaInfo{}, 0, fmt.Errorf("ingress: replica %s: %w", base, err)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return ReplicaInfo{}, 0, fmt.Errorf("ingress: GET %s%s: %w", base, api.InfoPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	rtt := time.Since(start)
	if err != nil {
		return ReplicaInfo{}, 0, fmt.Errorf("ingress: GET %s%s: %w", base, api.InfoPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return ReplicaInfo{}, 0, fmt.Errorf("ingress: GET %s%s: HTTP %s", base, api.InfoPath, resp.Status)
	}
	var info ReplicaInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return ReplicaInfo{}, 0, fmt.Errorf("ingress: GET %s%s: bad JSON: %w", base, api.InfoPath, err)
	}
	return info, rtt, nil
}
