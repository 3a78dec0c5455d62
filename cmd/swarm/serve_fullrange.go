package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/fullrange"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// fullRangeHelp is appended to serve's help.
const fullRangeHelp = `

Full-range replicas (--full-range): instead of hosting blocks, serve
registers a whole-model replica of an OpenAI-compatible engine (vLLM,
SGLang, llama.cpp's server, ollama) as a full-range server with span [0, L):

  swarm serve --full-range --backend-url http://127.0.0.1:8000 --model llama-7b/ --provider acme
  swarm serve --full-range --process "vllm serve meta-llama/Llama-2-7b-hf --port 8000" \
      --backend-url http://127.0.0.1:8000 --n-blocks 32 --model-name llama-2-7b

It waits for the engine's /health (starting it first with --process, as a
child process that is killed when serve exits, and whose death ends serve),
reads /v1/models, measures the engine's per-token time with two greedy
completions and advertises tau = per-token time / L in GET /v1/info, so that
ingresses weigh the replica against chains of block servers with WS-RR. It
forwards /v1/completions, /v1/chat/completions and /v1/models to the engine,
polls /health and /v1/models every --health-interval and advertises "down"
while they fail. It prints
  swarm serve: listening on http://HOST:PORT
the address to give to "swarm proxy --replicas". With --bootstrap it also
publishes itself in the registry (SERVING, DOWN while the engine is
unhealthy, LEFT on exit).`

// fullRangeOptions are the flags of `swarm serve --full-range`.
type fullRangeOptions struct {
	enabled bool
	cfg     fullrange.Config
}

// addFullRangeFlags registers the --full-range flags on serve's flag set.
func addFullRangeFlags(f *pflag.FlagSet) *fullRangeOptions {
	fr := &fullRangeOptions{cfg: fullrange.DefaultConfig()}
	f.BoolVar(&fr.enabled, "full-range", false, "register a whole-model replica of an OpenAI-compatible engine (span [0, L)) instead of hosting blocks; see below")
	f.StringVar(&fr.cfg.BackendURL, "backend-url", "", "with --full-range: the engine's base URL, http://HOST:PORT (its API is under /v1)")
	f.StringVar(&fr.cfg.Process, "process", "", "with --full-range: shell command starting the engine as a child process (e.g. \"vllm serve MODEL --port 8000\"); --backend-url says where it listens")
	f.StringVar(&fr.cfg.ModelName, "model-name", "", "the swarm's name of the model, which clients and ingresses match; block servers of two conversions of one\n"+
		"model (f16, q8_0, ...) given the same name serve together (default: the --model file's model name; with --full-range, else the engine's /v1/models id)")
	f.IntVar(&fr.cfg.Blocks, "n-blocks", 0, "with --full-range: L, the model's number of blocks, when --model is not given")
	f.DurationVar(&fr.cfg.HealthInterval, "health-interval", fr.cfg.HealthInterval, "with --full-range: period of the engine's /health and /v1/models polls")
	f.DurationVar(&fr.cfg.StartTimeout, "start-timeout", fr.cfg.StartTimeout, "with --full-range: how long to wait for the engine's first healthy /health")
	f.IntVar(&fr.cfg.MeasureTokens, "measure-tokens", fr.cfg.MeasureTokens, "with --full-range: tokens of the timed completion that measures the engine's per-token time")
	return fr
}

// runServeFullRange runs `swarm serve --full-range`: the replica's sidecar,
// alone or published in the registry.
func runServeFullRange(ctx context.Context, out, errOut io.Writer, cfg server.Config, o serveOptions, fr *fullRangeOptions, joinSwarm bool) error {
	logger, err := newLogger(errOut, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	if o.blocks != "" {
		return fmt.Errorf("%w: --blocks and --full-range exclude each other (a replica hosts the whole model)", errUsage)
	}
	c := fr.cfg
	c.Provider, c.MaxLength = o.provider, o.maxLength
	c.Listen = cfg.Listen
	if cfg.Model != "" {
		m, err := blocks.Open(cfg.Model)
		if err != nil {
			return err
		}
		info := m.Info()
		m.Close()
		if c.Blocks == 0 {
			c.Blocks = info.NBlocks
		} else if c.Blocks != info.NBlocks {
			return fmt.Errorf("%w: --n-blocks %d but %s has %d blocks", errUsage, c.Blocks, filepath.Base(cfg.Model), info.NBlocks)
		}
		if c.ModelName == "" {
			c.ModelName = info.Name
		}
		if c.MaxLength == 0 {
			c.MaxLength = info.MaxSeqLen
		}
		c.Model = &info
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", c.Listen, err)
	}
	defer ln.Close()
	srv, err := fullrange.Start(ctx, c, logger)
	if err != nil {
		return err
	}
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	info := srv.Info()
	logger.Info("full-range replica serving", "model", info.Model, "blocks", info.Span.String(), "url", url, "backend", c.BackendURL, "provider", c.Provider)
	if !joinSwarm {
		if _, err := fmt.Fprintln(out, launch.ServeReadyPrefix+url); err != nil {
			return err
		}
		return srv.Serve(ctx, ln)
	}
	id, addrs, stop, err := publishReplica(ctx, logger, o, srv, url)
	if err != nil {
		return err
	}
	defer stop()
	line, err := json.Marshal(struct {
		ID     string   `json:"id"`
		Blocks string   `json:"blocks"`
		Addrs  []string `json:"addrs"`
	}{id, info.Span.String(), addrs})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "%s%s\n%s%s\n", launch.ServeReadyPrefix, url, launch.ServeRegistryPrefix, line); err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}

// publishReplica joins the swarm and keeps the replica's registry entry
// current: SERVING, DOWN while the engine is unhealthy; LEFT when stop is
// called. It returns the node's peer id and multiaddrs.
func publishReplica(ctx context.Context, logger *slog.Logger, o serveOptions, srv *fullrange.Server, url string) (string, []string, func(), error) {
	if err := o.p2p.Validate(); err != nil {
		return "", nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.reg.Validate(); err != nil {
		return "", nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	m, err := node.Join(o.p2p, o.reg, logger)
	if err != nil {
		if errors.Is(err, p2p.ErrBadConfig) || errors.Is(err, p2p.ErrBadIdentity) || errors.Is(err, p2p.ErrBadSwarmKey) {
			return "", nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return "", nil, nil, err
	}
	n, reg := m.Node, m.Registry
	stop, err := node.PublishReplica(ctx, reg, srv, url, logger)
	if err != nil {
		m.Close()
		return "", nil, nil, err
	}
	logger.Info("published in the registry", "id", reg.ID(), "addrs", fmt.Sprint(n.Addrs()))
	var addrs []string
	for _, a := range n.Addrs() {
		addrs = append(addrs, a.String())
	}
	return n.ID().String(), addrs, func() {
		stop()
		m.Close()
	}, nil
}

// fullRangeJoins reports whether a --full-range serve joins the swarm: any
// node flag given.
func fullRangeJoins(changed func(string) bool) bool {
	for _, name := range []string{"bootstrap", "p2p-listen", "identity", "swarm-key", "announce-p2p"} {
		if changed(name) {
			return true
		}
	}
	return false
}
