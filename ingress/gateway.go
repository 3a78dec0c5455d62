package ingress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// Defaults, all in one place.
const (
	// DefaultRefresh is how long a model's probed candidates are reused
	// before they are probed again.
	DefaultRefresh = 2 * time.Second
	// DefaultMaxRetries bounds the re-routings of one request after server
	// failures (on top of the client's own hop failovers).
	DefaultMaxRetries = 2
	// DefaultCoverageWait is how long a request waits for the model's
	// coverage to come back (a server restarting or joining) before 503.
	DefaultCoverageWait = 2 * time.Second
	// coverageRetry is the time between two probes while waiting.
	coverageRetry = 250 * time.Millisecond
)

// Model is one model the ingress serves: its head (embeddings, final norm,
// LM head, tokenizer; never block weights) and what the front ends need.
type Model struct {
	// Name is the model id in requests ("model" of the OpenAI and PETALS
	// APIs) and in the swarm; it must equal Head.Info().Name, which block
	// servers and replicas advertise.
	Name string
	// Head is the client side of the model.
	Head blocks.Head
	// ChatTemplate is the Jinja2 chat template of the model's metadata
	// (GGUF tokenizer.chat_template, Hugging Face tokenizer_config.json
	// chat_template); empty when it has none (the OpenAI front end then
	// uses its plain fallback).
	ChatTemplate string
	// BOSText and EOSText are the text of the BOS and EOS pieces ("<s>",
	// "</s>"): the template variables bos_token and eos_token.
	BOSText, EOSText string
	// Created is when the ingress loaded the model (the "created" of the
	// OpenAI model object), Unix seconds.
	Created int64
	// MaxPromptBytes is the longest input text, in bytes, that can fit the
	// model's context: MaxSeqLen tokens of at most the longest piece of the
	// vocabulary each (LoadModel sets it; 0: unbounded). Longer input is
	// refused before it is tokenized, so a huge prompt costs neither
	// tokenizer time nor memory. It assumes the tokenizer drops no input
	// bytes (true of SentencePiece and byte-level BPE without
	// remove_extra_whitespaces).
	MaxPromptBytes int
}

// maxRequestBytes bounds a request to the ingress's APIs whatever the
// models, bytes.
const maxRequestBytes = 8 << 20

// MaxRequestBytes is the largest request (an HTTP body, a websocket
// message) worth reading for the models served, in bytes: input longer than
// a model's MaxPromptBytes is refused anyway, so a request may hold at most
// 6 times the largest of them (JSON escapes a byte as at most \u00XX) plus
// 64 KiB for the other fields and chat framing, and never more than 8 MiB.
// The front ends refuse a longer request after reading only that much.
func (g *Gateway) MaxRequestBytes() int64 {
	longest := 0
	for _, m := range g.cfg.Models {
		if m.MaxPromptBytes <= 0 {
			return maxRequestBytes
		}
		longest = max(longest, m.MaxPromptBytes)
	}
	return min(maxRequestBytes, 6*int64(longest)+64<<10)
}

// checkPromptBytes refuses input that cannot fit the model's context.
func (m Model) checkPromptBytes(text string) error {
	if m.MaxPromptBytes > 0 && len(text) > m.MaxPromptBytes {
		return fmt.Errorf("%w: the input has %d bytes, more than the model's context of %d tokens can hold (at most %d bytes)",
			ErrBadRequest, len(text), m.Head.Info().MaxSeqLen, m.MaxPromptBytes)
	}
	return nil
}

// Config configures a Gateway; `swarm proxy` maps its flags onto it.
type Config struct {
	// Models are the models served (at least one; names unique).
	Models []Model
	// Source lists each model's candidate servers.
	Source Source
	// Keys are the accepted API keys; nil requires none.
	Keys *Keys
	// Refresh is how long probed candidates are reused (> 0).
	Refresh time.Duration
	// MaxRetries bounds re-routings after server failures (>= 0).
	MaxRetries int
	// CoverageWait is how long a request whose model no route covers
	// waits, probing again, for coverage to return before it fails with
	// ErrNoRoute (>= 0; 0 fails at once).
	CoverageWait time.Duration
	// ClientOptions configure the block-chain client (timeouts, wire dtype).
	ClientOptions []client.Option
	// HTTPClient reaches replicas; nil uses a default client.
	HTTPClient *http.Client
	// Logger receives routing and failure logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of TTFT/TPOT and the candidate cache; nil is
	// time.Now.
	Now func() time.Time
	// Registry receives the metrics; nil creates one.
	Registry *prometheus.Registry
	// RateLimit is each API key's (or, without keys, each client
	// address's) sustained rate of requests per second; 0 is unlimited.
	RateLimit float64
	// RateBurst is how many requests may come at once above RateLimit
	// (the token bucket's size; >= 1 with a RateLimit).
	RateBurst int
	// NodeID is the libp2p peer id of the node the gateway runs in (the
	// proxy's client-only node with --bootstrap), shown in GET
	// /api/v1/state; empty without one.
	NodeID string
	// Bans is the ban list of servers that failed, shared by the probes
	// and every client of the gateway; nil creates one with the client
	// package's defaults (PETALS' 15 s, doubling).
	Bans *client.Bans
}

// DefaultConfig returns the defaults: DefaultRefresh, DefaultMaxRetries,
// DefaultCoverageWait, no API keys, no rate limit.
func DefaultConfig() Config {
	return Config{Refresh: DefaultRefresh, MaxRetries: DefaultMaxRetries, CoverageWait: DefaultCoverageWait}
}

// Validate returns an error wrapping ErrBadOption naming the first bad
// field.
func (c Config) Validate() error {
	switch {
	case len(c.Models) == 0:
		return fmt.Errorf("%w: no model (give --model PATH)", ErrBadOption)
	case c.Source == nil:
		return fmt.Errorf("%w: no source of servers (give --servers, --replicas or --bootstrap)", ErrBadOption)
	case c.Refresh <= 0:
		return fmt.Errorf("%w: refresh %v, want > 0", ErrBadOption, c.Refresh)
	case c.MaxRetries < 0:
		return fmt.Errorf("%w: max retries %d, want >= 0", ErrBadOption, c.MaxRetries)
	case c.CoverageWait < 0:
		return fmt.Errorf("%w: coverage wait %v, want >= 0", ErrBadOption, c.CoverageWait)
	case c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0):
		return fmt.Errorf("%w: rate limit %g requests per second, want >= 0 (0 = unlimited)", ErrBadOption, c.RateLimit)
	case c.RateLimit > 0 && c.RateBurst < 1:
		return fmt.Errorf("%w: rate burst %d, want >= 1 with a rate limit", ErrBadOption, c.RateBurst)
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		switch {
		case m.Head == nil:
			return fmt.Errorf("%w: model %d has no head", ErrBadOption, i)
		case m.Head.Tokenizer() == nil:
			return fmt.Errorf("%w: model %q has no tokenizer (give --tokenizer)", ErrBadOption, m.Name)
		case m.Name != m.Head.Info().Name:
			return fmt.Errorf("%w: model name %q differs from the model's own %q, which servers advertise", ErrBadOption, m.Name, m.Head.Info().Name)
		case seen[m.Name]:
			return fmt.Errorf("%w: model %q given twice", ErrBadOption, m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// Gateway routes and runs generation requests for the front ends. It is
// safe for concurrent use.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	http    *http.Client
	reg     *prometheus.Registry
	started time.Time // when New returned (State's Node.StartedAt)
	metrics *metrics
	usage   usageBook
	// bans is the ban list shared by the gateway's probes and clients.
	bans *client.Bans
	// limits are the request rate limits (Config.RateLimit).
	limits *limiters

	mu sync.Mutex
	// cacheLocked holds each model's last probe; guarded by mu.
	cacheLocked map[string]*probe

	// ctx ends background refreshes at Close; wg tracks them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// probe is one model's candidates as probed at a time.
type probe struct {
	mu sync.Mutex
	// Guarded by mu: the last probe and its time, and whether a refresh
	// runs in the background.
	atLocked         time.Time
	candsLocked      []client.Candidate
	refreshingLocked bool
}

// New validates cfg and returns a Gateway. Errors wrap ErrBadOption.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, http: cfg.HTTPClient, reg: cfg.Registry, cacheLocked: map[string]*probe{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.http == nil {
		g.http = &http.Client{}
	}
	if g.cfg.Now == nil {
		g.cfg.Now = time.Now
	}
	if g.reg == nil {
		g.reg = prometheus.NewRegistry()
	}
	g.metrics = newMetrics(g.reg)
	g.started = g.cfg.Now()
	g.limits = newLimiters(cfg.RateLimit, cfg.RateBurst, g.cfg.Now)
	g.bans = cfg.Bans
	if g.bans == nil {
		g.bans, _ = client.NewBans(client.DefaultBanBase, client.DefaultBanMax) // valid constants
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

// Close stops background probes and waits for them. Sessions stay usable.
func (g *Gateway) Close() error {
	g.cancel()
	g.wg.Wait()
	return nil
}

// Models returns the served models, in the order configured.
func (g *Gateway) Models() []Model { return slices.Clone(g.cfg.Models) }

// Model returns the served model of that name; errors wrap ErrUnknownModel.
func (g *Gateway) Model(name string) (Model, error) {
	for _, m := range g.cfg.Models {
		if m.Name == name {
			return m, nil
		}
	}
	names := make([]string, len(g.cfg.Models))
	for i, m := range g.cfg.Models {
		names[i] = m.Name
	}
	return Model{}, fmt.Errorf("%w: %q (this ingress serves %q)", ErrUnknownModel, name, names)
}

// Authenticate returns the account a request is billed to: the name of its
// API key ("Authorization: Bearer KEY", or ?api_key=KEY on websockets), or
// Anonymous when no keys are configured; and counts the request against
// the account's rate limit (anonymous: the client address's). Errors wrap
// ErrUnauthorized, or are a *RateLimitError (ErrRateLimited).
func (g *Gateway) Authenticate(r *http.Request) (string, error) {
	account, err := g.account(r)
	if err != nil {
		return "", err
	}
	if err := g.limits.allow(limitKey(account, r)); err != nil {
		g.metrics.rateLimited.Inc()
		return "", err
	}
	return account, nil
}

// account resolves a request's API key to its account.
func (g *Gateway) account(r *http.Request) (string, error) {
	if g.cfg.Keys == nil {
		return Anonymous, nil
	}
	key := bearer(r)
	if key == "" {
		return "", fmt.Errorf("%w: no API key (send \"Authorization: Bearer KEY\")", ErrUnauthorized)
	}
	name, ok := g.cfg.Keys.Lookup(key)
	if !ok {
		return "", fmt.Errorf("%w: unknown API key", ErrUnauthorized)
	}
	return name, nil
}

// Usage returns what an account has used so far.
func (g *Gateway) Usage(account string) Usage { return g.usage.get(account) }

// MetricsHandler serves the Prometheus metrics (GET /metrics).
func (g *Gateway) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{Registry: g.reg})
}

// RecordError counts an error a front end answered, by API and code.
func (g *Gateway) RecordError(api, code string) { g.metrics.errors.WithLabelValues(api, code).Inc() }

// Candidates returns the model's candidates as last probed. A probe older
// than Refresh is returned as is while one background probe refreshes it
// (so that concurrent requests never queue behind a probe); the first call
// and fresh (a retry after a failure) probe synchronously.
func (g *Gateway) Candidates(ctx context.Context, m Model, fresh bool) []client.Candidate {
	g.mu.Lock()
	p := g.cacheLocked[m.Name]
	if p == nil {
		p = &probe{}
		g.cacheLocked[m.Name] = p
	}
	g.mu.Unlock()
	p.mu.Lock()
	if !fresh && p.candsLocked != nil {
		cands := slices.Clone(p.candsLocked)
		if g.cfg.Now().Sub(p.atLocked) > g.cfg.Refresh && !p.refreshingLocked {
			p.refreshingLocked = true
			g.wg.Go(func() {
				c := g.probe(g.ctx, m)
				g.metrics.probes.WithLabelValues(m.Name).Inc()
				p.mu.Lock()
				defer p.mu.Unlock()
				p.refreshingLocked = false
				if g.ctx.Err() == nil {
					p.candsLocked, p.atLocked = c, g.cfg.Now()
				}
			})
		}
		p.mu.Unlock()
		// A server banned since the probe (a session could not dial it:
		// it died) is left out now, not once the cache is refreshed.
		markBanned(g.bans, cands)
		return cands
	}
	p.mu.Unlock()
	c := g.probe(ctx, m)
	g.metrics.probes.WithLabelValues(m.Name).Inc()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.candsLocked, p.atLocked = c, g.cfg.Now()
	return slices.Clone(c)
}

// probe asks the source for m's candidates, sharing the gateway's ban list
// (banned block servers are not probed; those that do not answer are
// banned), and marks banned replicas unusable.
func (g *Gateway) probe(ctx context.Context, m Model) []client.Candidate {
	cands := g.cfg.Source.Candidates(ctx, m.Head, client.WithBans(g.bans))
	markBanned(g.bans, cands)
	return cands
}

// markBanned sets the Err of each usable candidate that bans lists now.
func markBanned(bans *client.Bans, cands []client.Candidate) {
	for i := range cands {
		if cands[i].Err == nil {
			cands[i].Err = bans.Banned(cands[i].Endpoint.Inference)
		}
	}
}

// SessionRequest opens a Session.
type SessionRequest struct {
	// Model is the model's name.
	Model string
	// MaxLength is the most positions (input and generated tokens, all
	// calls together) the session holds.
	MaxLength int
	// Providers is the trusted-provider allowlist; nil allows all.
	Providers []string
	// Account is the usage account (Authenticate's result).
	Account string
	// API labels metrics: "completions", "chat" or "petals".
	API string
}

// Open routes a new session (Choose) and opens it: at each hop of a chain
// of block servers, or at a replica (which holds no state between calls;
// the session keeps the text). Errors wrap ErrUnknownModel, ErrBadRequest,
// ErrNoRoute or ErrUpstream.
func (g *Gateway) Open(ctx context.Context, req SessionRequest) (*Session, error) {
	m, err := g.Model(req.Model)
	if err != nil {
		return nil, err
	}
	if ctxLen := m.Head.Info().MaxSeqLen; req.MaxLength < 1 || (ctxLen > 0 && req.MaxLength > ctxLen) {
		return nil, fmt.Errorf("%w: max_length %d, want 1 to the model's context %d", ErrBadRequest, req.MaxLength, ctxLen)
	}
	s := &Session{g: g, m: m, req: req, exclude: map[string]error{}, arrival: g.cfg.Now()}
	if err := s.openCovered(ctx, false); err != nil {
		return nil, err
	}
	return s, nil
}

// openCovered is open, but when no route covers the model it probes again
// every 250 ms for up to CoverageWait (a server restarting or joining, a
// failover elsewhere in progress) before failing with ErrNoRoute.
func (s *Session) openCovered(ctx context.Context, fresh bool) error {
	err := s.open(ctx, fresh)
	if !errors.Is(err, ErrNoRoute) || s.g.cfg.CoverageWait <= 0 {
		return err
	}
	deadline := time.Now().Add(s.g.cfg.CoverageWait)
	for errors.Is(err, ErrNoRoute) {
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(coverageRetry, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err = s.open(ctx, true)
	}
	return err
}

// Request is one self-contained generation (an OpenAI request).
type Request struct {
	// Model is the model's name.
	Model string
	// Prompt is the text to continue: plain text, encoded with BOS first,
	// or a chat template's rendering (Rendered).
	Prompt string
	// Rendered says that Prompt is a chat template's rendering with its
	// special tokens as text (GenerateParams.Rendered).
	Rendered bool
	// MaxTokens is the most tokens to generate (>= 1); it is capped to the
	// model's context.
	MaxTokens int
	// Sampler is the sampling configuration; Seeded says whether the
	// request gave the seed.
	Sampler blocks.SamplerConfig
	Seeded  bool
	// Stop are stop sequences: the text ends before the first of them,
	// which is never returned.
	Stop []string
	// Providers is the trusted-provider allowlist; nil allows all.
	Providers []string
	// Account is the usage account.
	Account string
	// API labels metrics.
	API string
}

// Generate runs one request: it encodes the prompt to size the session
// (prompt tokens + MaxTokens - 1 positions, capped to the context), opens
// a session on the best route and generates, calling emit with each piece
// of text as soon as it is final. Errors wrap ErrUnknownModel,
// ErrBadRequest, ErrNoRoute or ErrUpstream (or come from emit).
func (g *Gateway) Generate(ctx context.Context, req Request, emit func(string) error) (Result, error) {
	arrival := g.cfg.Now()
	m, err := g.Model(req.Model)
	if err != nil {
		return Result{}, err
	}
	if err := m.checkPromptBytes(req.Prompt); err != nil {
		return Result{}, err
	}
	ids, err := EncodePrompt(m.Head.Tokenizer(), m.BOSText, req.Prompt, req.Rendered, true)
	if err != nil {
		return Result{}, fmt.Errorf("%w: encoding the prompt: %w", ErrBadRequest, err)
	}
	maxTokens := req.MaxTokens
	if maxTokens < 1 {
		return Result{}, fmt.Errorf("%w: max_tokens %d, want >= 1", ErrBadRequest, maxTokens)
	}
	if ctxLen := m.Head.Info().MaxSeqLen; ctxLen > 0 {
		if len(ids) >= ctxLen {
			return Result{}, fmt.Errorf("%w: the prompt has %d tokens, the model's context is %d", ErrBadRequest, len(ids), ctxLen)
		}
		maxTokens = min(maxTokens, ctxLen-len(ids)+1)
	}
	sreq := SessionRequest{Model: req.Model, MaxLength: len(ids) + maxTokens - 1, Providers: req.Providers, Account: req.Account, API: req.API}
	s, err := g.Open(ctx, sreq)
	if err != nil {
		g.count(sreq, "none", 0, 0, err)
		return Result{}, err
	}
	defer s.Close()
	s.arrival = arrival
	return s.Generate(ctx, GenerateParams{Input: req.Prompt, MaxTokens: maxTokens, Sampler: req.Sampler, Seeded: req.Seeded, Stop: req.Stop, Rendered: req.Rendered}, emit)
}

// count records a finished generation call in the metrics and usage.
func (g *Gateway) count(req SessionRequest, route string, prompt, completion int, err error) {
	outcome := "ok"
	if err != nil {
		outcome = ErrorCode(err)
	}
	g.metrics.requests.WithLabelValues(req.Model, req.API, route, outcome).Inc()
	g.metrics.tokens.WithLabelValues(req.Model, "prompt").Add(float64(prompt))
	g.metrics.tokens.WithLabelValues(req.Model, "completion").Add(float64(completion))
	acct := req.Account
	if acct == "" {
		acct = Anonymous
	}
	g.metrics.keyRequests.WithLabelValues(acct).Inc()
	g.metrics.keyTokens.WithLabelValues(acct, "prompt").Add(float64(prompt))
	g.metrics.keyTokens.WithLabelValues(acct, "completion").Add(float64(completion))
	g.usage.add(acct, 1, prompt, completion)
}

// ErrorCode names an error's kind for metrics and logs: bad_request,
// unauthorized, unknown_model, no_route, max_length, upstream, canceled or
// internal.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrUnknownModel):
		return "unknown_model"
	case errors.Is(err, ErrNoRoute):
		return "no_route"
	case errors.Is(err, ErrMaxLength):
		return "max_length"
	case errors.Is(err, ErrUpstream):
		return "upstream"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "internal"
}
