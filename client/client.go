package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/server/api"
	"github.com/swarmllm/swarm/swarm"
)

// Client opens sessions over chains of the candidate servers it was given.
// It is safe for concurrent use; each Session is used by one goroutine at a
// time.
type Client struct {
	head      blocks.Head
	model     swarm.ModelInfo
	endpoints []api.Endpoint
	cfg       config
}

// New returns a client for the model whose head is given (loaded with
// blocks.Model.LoadHead: no block weights) over the candidate servers
// (each "host:port", "ws://host:port" or "ws://host:port/v1/inference").
// Errors wrap ErrBadOption, or api.ErrBadAddress naming the bad address.
func New(head blocks.Head, servers []string, opts ...Option) (*Client, error) {
	if head == nil {
		return nil, fmt.Errorf("%w: nil head", ErrBadOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if len(servers) == 0 && cfg.source == nil {
		return nil, fmt.Errorf("%w: no candidate servers (give servers or WithSource)", ErrBadOption)
	}
	c := &Client{head: head, model: head.Info(), cfg: cfg}
	seen := map[string]bool{}
	for _, s := range servers {
		ep, err := api.ParseEndpoint(s)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		if !seen[ep.Inference] {
			seen[ep.Inference] = true
			c.endpoints = append(c.endpoints, ep)
		}
	}
	return c, nil
}

// Head returns the model head the client computes with.
func (c *Client) Head() blocks.Head { return c.head }

// Candidate is one server as discovery saw it.
type Candidate struct {
	// Endpoint is the server's URLs.
	Endpoint api.Endpoint
	// Info is what the server advertised (valid when Err is nil).
	Info api.Info
	// RTT is the round trip of GET /v1/info (the faster of two), the
	// client's estimate of t_cj before any step was timed.
	RTT time.Duration
	// Err says why the server cannot be used: unreachable, another model,
	// another protocol version, or shutting down.
	Err error
}

// Usable reports whether the candidate can take sessions.
func (c Candidate) Usable() bool { return c.Err == nil }

// Candidates fetches the Info document (GET /v1/info, or the
// WithInfoFetcher transport) of every candidate server concurrently,
// measures its RTT and checks that it serves the client's model with this
// protocol version and admits sessions. It returns one Candidate per
// server: those given to New in their order, then the WithSource ones (a
// source's error is logged; Open and failovers return it).
func (c *Client) Candidates(ctx context.Context) []Candidate {
	cands, err := c.candidates(ctx, nil)
	if err != nil {
		c.cfg.log.Warn("candidate source failed", "err", err)
	}
	return cands
}

// endpointsNow returns the servers given to New followed by the source's
// current ones, without duplicates.
func (c *Client) endpointsNow(ctx context.Context) ([]api.Endpoint, error) {
	if c.cfg.source == nil {
		return c.endpoints, nil
	}
	more, err := c.cfg.source.Endpoints(ctx)
	eps := slices.Clone(c.endpoints)
	seen := map[string]bool{}
	for _, ep := range eps {
		seen[ep.Inference] = true
	}
	for _, ep := range more {
		if !seen[ep.Inference] {
			seen[ep.Inference] = true
			eps = append(eps, ep)
		}
	}
	if err != nil {
		return eps, fmt.Errorf("client: candidate source: %w", err)
	}
	return eps, nil
}

// candidates probes the servers not in skip (a hung server there would
// cost the info timeout); skipped ones come back with skip's error.
func (c *Client) candidates(ctx context.Context, skip map[string]error) ([]Candidate, error) {
	endpoints, srcErr := c.endpointsNow(ctx)
	out := make([]Candidate, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		if err := skip[ep.Inference]; err != nil {
			out[i] = Candidate{Endpoint: ep, Err: err}
			continue
		}
		wg.Go(func() { out[i] = c.probe(ctx, ep) })
	}
	wg.Wait()
	return out, srcErr
}

// probe reads one server's info twice (the second on a warm connection)
// and keeps the faster round trip as RTT.
func (c *Client) probe(ctx context.Context, ep api.Endpoint) Candidate {
	cand := Candidate{Endpoint: ep}
	var best time.Duration
	for i := range 2 {
		info, rtt, err := c.fetchInfo(ctx, ep)
		if err != nil {
			cand.Err = err
			return cand
		}
		if i == 0 || rtt < best {
			best = rtt
		}
		cand.Info = info
	}
	cand.RTT = best
	cand.Err = c.check(cand.Info)
	return cand
}

// fetchInfo reads one server's Info within the info timeout and returns
// the time the read took.
func (c *Client) fetchInfo(ctx context.Context, ep api.Endpoint) (api.Info, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.infoTimeout)
	defer cancel()
	fetch := c.cfg.fetchInfo
	if fetch == nil {
		fetch = HTTPInfo(c.cfg.httpClient)
	}
	start := time.Now()
	info, err := fetch(ctx, ep)
	return info, time.Since(start), err
}

// HTTPInfo returns the default InfoFetcher: GET ep.Info with hc, the JSON
// body (at most api.MaxInfoBytes) decoded as api.Info.
func HTTPInfo(hc *http.Client) InfoFetcher {
	return func(ctx context.Context, ep api.Endpoint) (api.Info, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.Info, nil)
		if err != nil {
			return api.Info{}, fmt.Errorf("client: %s: %w", ep.Info, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return api.Info{}, fmt.Errorf("client: GET %s: %w", ep.Info, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, api.MaxInfoBytes))
		if err != nil {
			return api.Info{}, fmt.Errorf("client: GET %s: %w", ep.Info, err)
		}
		if resp.StatusCode != http.StatusOK {
			return api.Info{}, fmt.Errorf("client: GET %s: HTTP %s", ep.Info, resp.Status)
		}
		var info api.Info
		if err := json.Unmarshal(body, &info); err != nil {
			return api.Info{}, fmt.Errorf("client: GET %s: bad JSON: %w", ep.Info, err)
		}
		return info, nil
	}
}

// check reports why a server's advertised info makes it unusable.
func (c *Client) check(info api.Info) error {
	switch {
	case info.ProtocolVersion != swarm.ProtocolVersion:
		return fmt.Errorf("client: server speaks protocol version %d, this client %d", info.ProtocolVersion, swarm.ProtocolVersion)
	case info.State != api.StateServing:
		return fmt.Errorf("client: server is %q, not admitting sessions", info.State)
	case info.FullRange:
		return fmt.Errorf("client: full-range (text) servers are not supported by this client")
	}
	if err := sameModel(c.model, info.ModelInfo); err != nil {
		return err
	}
	if err := info.Span.Validate(c.model.NBlocks); err != nil {
		return fmt.Errorf("client: server advertises span %s: %w", info.Span, err)
	}
	return nil
}

// sameModel checks that a server's model computes the same blocks as the
// client's: same name and the same shapes, RoPE and norm. The context
// length, the storage of the embeddings and the file format may differ.
func sameModel(client, server swarm.ModelInfo) error {
	type field struct {
		name   string
		c, s   any
		differ bool
	}
	ropeC, ropeS := "none", "none"
	if client.RopeScaling != nil {
		ropeC = fmt.Sprintf("%+v", *client.RopeScaling)
	}
	if server.RopeScaling != nil {
		ropeS = fmt.Sprintf("%+v", *server.RopeScaling)
	}
	for _, f := range []field{
		{"name", client.Name, server.Name, client.Name != server.Name},
		{"arch", client.Arch, server.Arch, client.Arch != server.Arch},
		{"n_blocks", client.NBlocks, server.NBlocks, client.NBlocks != server.NBlocks},
		{"d_model", client.DModel, server.DModel, client.DModel != server.DModel},
		{"n_heads", client.NHeads, server.NHeads, client.NHeads != server.NHeads},
		{"n_kv_heads", client.NKVHeads, server.NKVHeads, client.NKVHeads != server.NKVHeads},
		{"head_dim", client.HeadDim, server.HeadDim, client.HeadDim != server.HeadDim},
		{"ffn_dim", client.FFNDim, server.FFNDim, client.FFNDim != server.FFNDim},
		{"rope_theta", client.RopeTheta, server.RopeTheta, client.RopeTheta != server.RopeTheta},
		{"rope_scaling", ropeC, ropeS, ropeC != ropeS},
		{"norm_eps", client.NormEps, server.NormEps, client.NormEps != server.NormEps},
	} {
		if f.differ {
			return fmt.Errorf("%w: server's %s is %v, the client's model has %v", ErrModelMismatch, f.name, f.s, f.c)
		}
	}
	return nil
}

// usable returns the candidates that can take sessions, minus the
// excluded endpoints.
func usable(cands []Candidate, excluded map[string]error) []Candidate {
	var out []Candidate
	for _, c := range cands {
		if c.Usable() && excluded[c.Endpoint.Inference] == nil {
			out = append(out, c)
		}
	}
	return out
}

// errCanceled reports whether err comes from a cancelled or expired
// context.
func errCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
