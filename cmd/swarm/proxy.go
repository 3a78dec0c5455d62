package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/dashboard"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/openai"
	"github.com/swarmllm/swarm/ingress/petals"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

const proxyLong = `proxy runs an ingress node: the entry point through which applications
use the swarm. It loads only the head of each model (embeddings, final norm,
LM head, tokenizer; of a hub repository ORG/REPO[@REVISION][:FILE] only
these and the config are downloaded, with HF_ENDPOINT, HF_TOKEN and
HF_HUB_OFFLINE), finds the model's servers (block servers hosting spans,
and full-range replicas of an OpenAI-compatible engine registered with
"swarm serve --full-range"), and serves:

  GET  /v1/models[/{model}]    OpenAI: the models served (or one)
  POST /v1/completions         OpenAI: text completion (stream: true for SSE)
  POST /v1/chat/completions    OpenAI: chat completion (stream: true for SSE)
  GET  /api/v2/generate        websocket, the PETALS chat protocol
                               (open_inference_session, then generate)
  POST /api/v1/generate        PETALS chat HTTP API: one generation
  GET  /api/v1/state           JSON: per model, block coverage, servers with
                               span, tau, throughput, load, state; health
  GET  /api/v1/usage           JSON: the calling API key's usage
  GET  /metrics                Prometheus: requests, tokens, TTFT and TPOT
                               histograms, errors by code, per-key usage
  GET  /health                 200 while the proxy runs

Each request is routed over ONE routing graph with WS-RR: block servers with
their spans, tau, cache room and load, and each replica as a single [0, L)
hop with its measured per-token time; the cheapest route wins. A request may
restrict the candidates to trusted providers with the header
"X-Swarm-Providers: a,b" (or the request field "swarm_providers"); a request
whose providers leave no route gets 503. A chain's failed server is replaced
by the client (its client-side cache is replayed, the stream continues); a
failed route is routed again and resumed (up to --max-retries).

Chat completions use the model's chat template (GGUF tokenizer.chat_template
or tokenizer_config.json chat_template, rendered as Jinja2); a model without
one uses the plain fallback: the messages' contents joined by newlines, no
role markers (one empty user message is the empty prompt).

Servers are given with --servers and --replicas, each optionally prefixed
with PROVIDER= to assign a provider ("acme=ws://10.0.0.5:7001"); otherwise
the provider a server advertises counts. With --bootstrap the proxy instead
joins the swarm as a client-only node and reads its registry replica: the
model's SERVING block servers and full-range replicas, with the providers
they published.

Once listening it prints one line on stdout:
  swarm proxy: listening on http://HOST:PORT

Examples:
  swarm proxy --model stories260K.bin --tokenizer tok512.bin --listen 127.0.0.1:8000 \
      --servers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
  swarm proxy --model stories260K.gguf --servers alice=127.0.0.1:7001,alice=127.0.0.1:7002 \
      --replicas bob=http://127.0.0.1:7100 --api-keys keys.txt
  curl http://127.0.0.1:8000/v1/completions -H 'Content-Type: application/json' \
      -d '{"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 50}'`

// proxyOptions are the flags of `swarm proxy`.
type proxyOptions struct {
	models       []string
	tokenizers   []string
	listen       string
	servers      []string
	replicas     []string
	apiKeys      string
	cors         []string
	refresh      time.Duration
	maxRetries   int
	rateLimit    float64
	rateBurst    int
	coverageWait time.Duration
	logLevel     string
	logFormat    string

	stepTimeout  time.Duration
	allocTimeout time.Duration
	failoverWait time.Duration
	wireDType    string

	// http bounds the HTTP server's connections.
	http ingress.HTTPConfig

	// --bootstrap and the other node flags; the registry's timing.
	p2p  p2p.Config
	reg  registry.Config
	wait time.Duration
}

func newProxyCmd() *cobra.Command {
	o := proxyOptions{listen: "127.0.0.1:8000", http: ingress.DefaultHTTPConfig(), p2p: p2p.DefaultConfig(), reg: registry.DefaultConfig(), wait: 30 * time.Second}
	o.p2p.DHTMode = p2p.DHTModeClient
	cmd := &cobra.Command{
		Use:   "proxy --model PATH|ORG/REPO [--model ...] --listen HOST:PORT (--servers URL,... | --replicas URL,... | --bootstrap MULTIADDR ...)",
		Short: "Serve the OpenAI-compatible and PETALS websocket APIs over the swarm",
		Long:  proxyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxy(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	f.StringArrayVar(&o.models, "model", nil, "model to serve: a .gguf file, a llama2.c .bin checkpoint, a Hugging Face directory or a hub repository ORG/REPO[@REVISION][:FILE];\n"+
		"only its head is loaded (and downloaded: config, tokenizer, chat template, embeddings, final norm, LM head) (repeatable; required)")
	f.StringArrayVar(&o.tokenizers, "tokenizer", nil, "tokenizer file for the model given at the same position (repeatable; a llama2.c checkpoint needs one)")
	f.StringVar(&o.listen, "listen", o.listen, "TCP address of the HTTP API, HOST:PORT; port 0 lets the OS choose (the URL is printed)")
	f.StringSliceVar(&o.servers, "servers", nil, "comma-separated block servers, [PROVIDER=]ws://HOST:PORT or [PROVIDER=]HOST:PORT")
	f.StringSliceVar(&o.replicas, "replicas", nil, "comma-separated full-range replicas, [PROVIDER=]http://HOST:PORT as `swarm serve --full-range` prints")
	o.p2p.AddFlags(f)
	o.reg.AddFlags(f)
	f.DurationVar(&o.wait, "wait", o.wait, "with --bootstrap: how long to wait for a bootstrap peer at start")
	f.StringVar(&o.apiKeys, "api-keys", "", "file of accepted API keys, one per line with an optional name after it; requests then need \"Authorization: Bearer KEY\" (none needed without this flag)")
	f.StringSliceVar(&o.cors, "cors-origins", nil, "comma-separated origins (scheme://host[:port], or *) whose browser apps may call the API cross-origin (none without this flag)")
	f.DurationVar(&o.refresh, "refresh", ingress.DefaultRefresh, "how long the servers' probed state (/v1/info) is reused for routing before it is probed again")
	f.IntVar(&o.maxRetries, "max-retries", ingress.DefaultMaxRetries, "how many times a request whose route failed is routed again and resumed")
	f.Float64Var(&o.rateLimit, "rate-limit", 0, "requests per second each API key (without --api-keys: each client IP address) may make, sustained;\n"+
		"over it a request gets 429 with Retry-After; 0 = unlimited")
	f.IntVar(&o.rateBurst, "rate-burst", 10, "requests a key or address may make at once above --rate-limit (the token bucket's size)")
	f.DurationVar(&o.coverageWait, "coverage-wait", ingress.DefaultCoverageWait, "how long a request waits for a server of missing blocks to come back or join before 503; 0 = fail at once")
	f.DurationVar(&o.stepTimeout, "step-timeout", client.DefaultStepTimeout, "how long a block server may take to answer one step before the client fails over")
	f.DurationVar(&o.allocTimeout, "alloc-timeout", client.DefaultAllocTimeout, "how long a block server may queue a session for attention-cache room")
	f.DurationVar(&o.failoverWait, "failover-wait", client.DefaultFailoverWait, "with --bootstrap: when a server fails and no other one hosts its blocks, how long the session waits for one to join (or move there) in the registry before it fails; 0 = fail at once")
	f.StringVar(&o.wireDType, "wire-dtype", "f32", "dtype of hidden states sent to block servers: f32 (exact), f16 or bf16")
	f.StringVar(&o.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", logFormatHelp)
	f.DurationVar(&o.http.ReadTimeout, "read-timeout", o.http.ReadTimeout, "how long a client may take to send a whole request, body included, before it is disconnected (streamed answers are not bounded)")
	f.DurationVar(&o.http.IdleTimeout, "idle-timeout", o.http.IdleTimeout, "how long a keep-alive connection may stay idle between requests")
	f.IntVar(&o.http.MaxConnections, "max-connections", o.http.MaxConnections, "most client connections served at once; more wait until one closes")
	cmd.AddCommand(newProxyBenchCmd())
	return cmd
}

// loadIngressModel is ingress.LoadModel of --model (a path, or a hub
// repository whose head only is downloaded, with the environment's hub
// settings) with its bad-option errors as usage errors (exit status 2).
func loadIngressModel(ctx context.Context, errOut io.Writer, path, tokenizerPath string) (ingress.Model, error) {
	o := generateOptions{model: path}
	if err := o.resolveModel(ctx, errOut); err != nil {
		return ingress.Model{}, err
	}
	m, err := ingress.LoadModel(o.model, tokenizerPath, o.modelOptions()...)
	if errors.Is(err, ingress.ErrBadOption) {
		return m, fmt.Errorf("%w: %w", errUsage, err)
	}
	return m, err
}

// newProxyHandler mounts the front ends and the state endpoints; other
// paths and methods are answered in OpenAI's error JSON.
func newProxyHandler(gw *ingress.Gateway) (http.Handler, error) {
	oa, err := openai.New(gw)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", oa)
	mux.Handle(petals.Path, petals.New(gw))
	mux.Handle(petals.HTTPPath, petals.New(gw))
	mux.Handle("GET /api/v1/state", gw.StateHandler())
	mux.Handle("GET /api/v1/usage", gw.UsageHandler())
	mux.Handle("GET /metrics", gw.MetricsHandler())
	dashboard.Mount(mux) // GET / and its assets
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	return openai.JSONErrors(mux), nil // 404 and 405 in OpenAI's error JSON
}

// newGateway builds the gateway of the proxy flags; source is the registry
// source with --bootstrap (nil otherwise).
// nodeID is the proxy's libp2p peer id with --bootstrap ("" otherwise).
func newGateway(ctx context.Context, errOut io.Writer, o proxyOptions, logger *slog.Logger, source ingress.Source, nodeID string) (*ingress.Gateway, error) {
	switch {
	case len(o.models) == 0:
		return nil, fmt.Errorf("%w: --model is required", errUsage)
	case len(o.tokenizers) > len(o.models):
		return nil, fmt.Errorf("%w: %d --tokenizer flags for %d --model flags", errUsage, len(o.tokenizers), len(o.models))
	case len(o.p2p.Bootstrap) > 0 && len(o.servers)+len(o.replicas) > 0:
		return nil, fmt.Errorf("%w: give --bootstrap or --servers/--replicas, not both", errUsage)
	case len(o.p2p.Bootstrap) == 0 && len(o.servers)+len(o.replicas) == 0:
		return nil, fmt.Errorf("%w: give the servers: --servers and/or --replicas (or --bootstrap)", errUsage)
	}
	dtype, err := swarm.ParseDType(o.wireDType)
	if err != nil {
		return nil, fmt.Errorf("%w: --wire-dtype: %w", errUsage, err)
	}
	cfg := ingress.DefaultConfig()
	cfg.Refresh, cfg.MaxRetries, cfg.Logger = o.refresh, o.maxRetries, logger
	cfg.RateLimit, cfg.RateBurst, cfg.CoverageWait = o.rateLimit, o.rateBurst, o.coverageWait
	cfg.NodeID, cfg.Registry = nodeID, prometheus.NewRegistry()
	cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.ClientOptions = []client.Option{client.WithStepTimeout(o.stepTimeout), client.WithAllocTimeout(o.allocTimeout), client.WithFailoverWait(o.failoverWait),
		client.WithWireDType(dtype), client.WithLogger(logger)}
	if len(o.p2p.Bootstrap) == 0 {
		if cfg.Source, err = ingress.NewStatic(o.servers, o.replicas); err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
	} else {
		cfg.Source = source
	}
	if o.apiKeys != "" {
		if cfg.Keys, err = ingress.LoadKeys(o.apiKeys); err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	for i, path := range o.models {
		tok := ""
		if i < len(o.tokenizers) {
			tok = o.tokenizers[i]
		}
		m, err := loadIngressModel(ctx, errOut, path, tok)
		if err != nil {
			return nil, err
		}
		cfg.Models = append(cfg.Models, m)
	}
	gw, err := ingress.New(cfg)
	if errors.Is(err, ingress.ErrBadOption) {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return gw, err
}

// runProxy serves until ctx ends, then shuts the HTTP server down.
func runProxy(ctx context.Context, out, errOut io.Writer, o proxyOptions) error {
	logger, err := newLogger(errOut, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	if o.refresh <= 0 {
		return fmt.Errorf("%w: --refresh %v, want > 0", errUsage, o.refresh)
	}
	if o.maxRetries < 0 {
		return fmt.Errorf("%w: --max-retries %d, want >= 0", errUsage, o.maxRetries)
	}
	if err := o.http.Validate(); err != nil {
		return fmt.Errorf("%w: --read-timeout, --idle-timeout, --max-connections: %w", errUsage, err)
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("%w: --listen %q: want HOST:PORT (e.g. 127.0.0.1:8000): %w", errUsage, o.listen, err)
	}
	var source ingress.Source
	nodeID := ""
	if len(o.p2p.Bootstrap) > 0 {
		if err := o.p2p.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		if err := o.reg.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		if o.wait <= 0 {
			return fmt.Errorf("%w: --wait %v, want > 0", errUsage, o.wait)
		}
		wctx, cancel := context.WithTimeout(ctx, o.wait)
		cn, err := node.JoinClient(wctx, o.p2p, o.reg)
		cancel()
		if err != nil {
			return fmt.Errorf("proxy: %w (--wait %v)", err, o.wait)
		}
		defer cn.Close()
		source = node.NewSource(cn, nil)
		nodeID = cn.Node.ID().String()
		logger.Info("joined the swarm as a client-only node", "id", cn.Node.ID().String())
	}
	gw, err := newGateway(ctx, errOut, o, logger, source, nodeID)
	if err != nil {
		return err
	}
	defer gw.Close()
	h, err := newProxyHandler(gw)
	if err != nil {
		return err
	}
	if h, err = openai.CORS(o.cors, h); err != nil {
		return fmt.Errorf("%w: --cors-origins: %w", errUsage, err)
	}
	h = ingress.AccessLog(logger, h) // a request id and one log line per request
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("proxy: listen on %s: %w", o.listen, err)
	}
	hs, ln := ingress.NewHTTPServer(h, ln, o.http, slog.NewLogLogger(logger.Handler(), slog.LevelDebug))
	url := "http://" + ln.Addr().String()
	names := make([]string, 0, len(gw.Models()))
	for _, m := range gw.Models() {
		names = append(names, m.Name)
	}
	logger.Info("proxy serving", "models", names, "url", url, "servers", len(o.servers), "replicas", len(o.replicas), "api_keys", o.apiKeys != "")
	if _, err := fmt.Fprintln(out, launch.ProxyReadyPrefix+url); err != nil {
		ln.Close()
		return err
	}
	if err := ingress.Serve(ctx, hs, ln, 10*time.Second); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}
