package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
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
	if cfg.bans == nil {
		cfg.bans, _ = NewBans(DefaultBanBase, DefaultBanMax) // valid constants
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

// Candidate is one server as discovery saw it: a block server (a span;
// takes hidden states over the session protocol) or a full-range replica
// (span [0, L) of an OpenAI-compatible engine; takes text).
type Candidate struct {
	// Endpoint is the server's URLs: for a block server its inference
	// websocket (or libp2p://PEERID) and its info URL; for a replica
	// (api.ReplicaEndpoint) Inference is the base of its OpenAI-compatible
	// API, http://HOST:PORT.
	Endpoint api.Endpoint
	// Info is what the server advertised (valid when Err is nil).
	// Info.FullRange marks a replica; Info.Provider is matched against
	// trusted-provider allowlists.
	Info api.Info
	// RTT is the round trip of reading its Info document (the faster of
	// two), the client's estimate of t_cj before any step was timed.
	RTT time.Duration
	// Err says why the server cannot be used: unreachable, another model,
	// another protocol version, or shutting down.
	Err error
}

// Usable reports whether the candidate can take sessions.
func (c Candidate) Usable() bool { return c.Err == nil && c.Info.State == api.StateServing }

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

// candidates probes the servers neither in skip, nor banned, nor reported
// unhealthy by a HealthSource (a hung server there would cost the info
// timeout); those come back with the reason. A server whose info cannot be
// read in time is banned.
func (c *Client) candidates(ctx context.Context, skip map[string]error) ([]Candidate, error) {
	endpoints, srcErr := c.endpointsNow(ctx)
	out := make([]Candidate, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		if err := skip[ep.Inference]; err != nil {
			out[i] = Candidate{Endpoint: ep, Err: err}
			continue
		}
		if err := c.cfg.bans.Banned(ep.Inference); err != nil {
			out[i] = Candidate{Endpoint: ep, Err: err}
			continue
		}
		if hs, ok := c.cfg.source.(HealthSource); ok {
			if err := hs.Health(ep); err != nil {
				out[i] = Candidate{Endpoint: ep, Err: fmt.Errorf("%w: %w", ErrUnhealthy, err)}
				continue
			}
		}
		wg.Go(func() { out[i] = c.probe(ctx, ep) })
	}
	wg.Wait()
	return out, srcErr
}

// probe reads one server's info with the client's fetcher, both reads
// within the info timeout, and checks it against the client's model; a
// server that does not answer (while ctx lives) is banned.
func (c *Client) probe(ctx context.Context, ep api.Endpoint) Candidate {
	fetch := c.cfg.fetchInfo
	if fetch == nil {
		fetch = HTTPInfo(c.cfg.httpClient)
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.infoTimeout)
	defer cancel()
	cand, answered := probe(pctx, fetch, ep, c.model)
	if !answered && ctx.Err() == nil {
		d := c.cfg.bans.Fail(ep.Inference, cand.Err)
		c.cfg.log.Warn("server did not answer its info probe: banned", "server", ep.Inference, "for", d, "err", cand.Err)
	}
	return cand
}

// Probe reads a server's Info document twice with fetch (the second read
// on a warm connection) and keeps the faster round trip as the
// candidate's RTT, then checks that the server can take sessions of model:
// this protocol version, admitting sessions, and for a block server the
// same model computation (name, shapes, RoPE, norm) over a span inside it,
// for a full-range replica the same model name. ctx bounds both reads: a
// server whose second read does not finish in time keeps its first
// answer. The candidate's Err says why it cannot be used (api.FetchInfo
// applies api.DefaultInfoTimeout when ctx has no deadline).
func Probe(ctx context.Context, fetch InfoFetcher, ep api.Endpoint, model swarm.ModelInfo) Candidate {
	cand, _ := probe(ctx, fetch, ep, model)
	return cand
}

// probe is Probe; answered reports whether the info document was read
// (false: the server is unreachable, hung or answered garbage).
func probe(ctx context.Context, fetch InfoFetcher, ep api.Endpoint, model swarm.ModelInfo) (cand Candidate, answered bool) {
	cand = Candidate{Endpoint: ep}
	for i := range 2 {
		start := time.Now()
		info, err := fetch(ctx, ep)
		rtt := time.Since(start)
		if err != nil {
			if i == 0 || ctx.Err() == nil {
				cand.Err = err
				return cand, false
			}
			break // the first answer stands
		}
		if i == 0 || rtt < cand.RTT {
			cand.RTT = rtt
		}
		cand.Info = info
	}
	cand.Err = check(model, cand.Info)
	return cand, true
}

// HTTPInfo returns the default InfoFetcher: api.FetchInfo of ep.Info with
// hc.
func HTTPInfo(hc *http.Client) InfoFetcher {
	return func(ctx context.Context, ep api.Endpoint) (api.Info, error) {
		return api.FetchInfo(ctx, hc, ep.Info)
	}
}

// check reports why a server's advertised info makes it unusable for
// sessions of model.
func check(model swarm.ModelInfo, info api.Info) error {
	switch {
	case info.ProtocolVersion != swarm.ProtocolVersion:
		return fmt.Errorf("client: server speaks protocol version %d, this client %d", info.ProtocolVersion, swarm.ProtocolVersion)
	case info.State != api.StateServing:
		return fmt.Errorf("client: server is %q, not admitting sessions", info.State)
	case info.FullRange && info.Model != model.Name:
		return fmt.Errorf("%w: replica serves model %q, not %q", ErrModelMismatch, info.Model, model.Name)
	case info.FullRange:
		return nil
	case info.ModelInfo == nil:
		return fmt.Errorf("%w: server advertises no model description", ErrModelMismatch)
	}
	if err := sameModel(model, *info.ModelInfo); err != nil {
		return err
	}
	if err := info.Span.Validate(model.NBlocks); err != nil {
		return fmt.Errorf("client: server advertises span %s: %w", info.Span, err)
	}
	return nil
}

// sameModel checks that a server's model computes the same blocks as the
// client's: same name and the same shapes, RoPE and norm. The context
// length, the storage dtype of the weights (the server's memory is routed
// by what it advertises, routing.FromServerInfo), the storage of the
// embeddings and the file format may differ.
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
		{"arch", client.Arch, server.Arch, computeArch(client.Arch) != computeArch(server.Arch)},
		{"n_blocks", client.NBlocks, server.NBlocks, client.NBlocks != server.NBlocks},
		{"d_model", client.DModel, server.DModel, client.DModel != server.DModel},
		{"n_heads", client.NHeads, server.NHeads, client.NHeads != server.NHeads},
		{"n_kv_heads", client.NKVHeads, server.NKVHeads, client.NKVHeads != server.NKVHeads},
		{"head_dim", client.HeadDim, server.HeadDim, client.HeadDim != server.HeadDim},
		{"ffn_dim", client.FFNDim, server.FFNDim, client.FFNDim != server.FFNDim},
		{"rope_theta", client.RopeTheta, server.RopeTheta, client.RopeTheta != server.RopeTheta},
		{"rope_scaling", ropeC, ropeS, ropeC != ropeS},
		{"norm_eps", client.NormEps, server.NormEps, client.NormEps != server.NormEps},
		{"sliding_window", client.SlidingWindow, server.SlidingWindow, client.SlidingWindow != server.SlidingWindow},
		{"sliding_pattern", client.SlidingPattern, server.SlidingPattern, client.SlidingPattern != server.SlidingPattern},
	} {
		if f.differ {
			return fmt.Errorf("%w: server's %s is %v, the client's model has %v", ErrModelMismatch, f.name, f.s, f.c)
		}
	}
	return nil
}

// computeArch maps an architecture name to the computation it names:
// llama.cpp's converter writes Mistral models as GGUF "llama" (the same
// blocks; the sliding window, compared on its own, is the difference), so
// a Mistral HF directory and its GGUF serve one swarm.
func computeArch(arch string) string {
	if arch == "mistral" {
		return "llama"
	}
	return arch
}

// errCanceled reports whether err comes from a cancelled or expired
// context.
func errCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
