package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/hub/modelsrc"
	"github.com/swarmllm/swarm/internal/cliconf"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// defaultTargetSessions is R of `swarm serve --blocks auto` when
// --target-sessions is not given.
const defaultTargetSessions = 8

const serveLong = `serve hosts a span of a model's transformer blocks and runs them for
clients: it loads only those blocks' weights, measures its decode time per
block (tau) and prefill time per block (tauI, fit linearly in the input
length) on this machine, or reads them from the measurement cache, and
serves:

  GET /v1/inference   websocket carrying swarm wire frames (sessions)
  GET /v1/info        JSON: span, tau, tauI, memory, cache room, per-session
                      load, queue, model description, state

Sessions are admitted by memory model (2) of the paper: the span's weights
plus k * s_c bytes of attention cache per open session must fit --memory. A
session that does not fit waits (FIFO, up to the client's alloc timeout) and
is told its queue position; one that can never fit is refused.

In the swarm (--blocks auto, or any of --bootstrap, --p2p-listen,
--identity, --swarm-key, or --listen none) the server is also a libp2p node
and a member of the registry. It serves the same sessions over the
/swarm/inference/1 libp2p stream protocol (and its info over
/swarm/info/1), for clients that cannot reach its websocket (behind a NAT,
through a circuit relay); --listen none serves only those. It announces
JOIN, then SERVING with its websocket URL and libp2p addresses, its load as
sessions open and close, DOWN when serving fails and LEFT on SIGTERM.

--blocks auto chooses the span: the server fetches the registry from the
bootstrap peers, measures tau and tauI on its first block, its memory
M_j (--memory, default half of the available memory) and its round trip
time to the client and ingress nodes of the swarm (libp2p pings to the nodes
advertised at the client rendezvous, or to the bootstrap peers when there
are none), and takes the span incremental CG-BP (paper 003, Alg. 2) gives
it next to the JOIN and SERVING servers of the registry: m_j = min(floor(M_j
/ (s_m + s_c R)), L) blocks with R = --target-sessions and s_c the cache of
one block for --max-length tokens, placed where the demand is least served.
It announces JOIN with that tentative span, waits --join-settle so that
servers starting at the same moment see each other, waits for the servers
that joined before it to settle, places them in the order they joined
(ties by peer id) and itself after them, announces the final span and loads
it. Every server of a model must use the same --target-sessions and
--max-length.

Once listening it prints on stdout:
  swarm serve: listening on ws://HOST:PORT/v1/inference
(libp2p://PEERID/swarm/inference/1 with --listen none), and in the swarm a
second line
  swarm serve: registry {"id": PEERID, "blocks": "START:END", "addrs": [...]}
It logs to stderr. On SIGTERM or SIGINT it announces LEFT, stops admitting
sessions, lets open sessions finish for --drain-timeout, then tells the
rest to fail over, and exits 0.

Spans are 0-based and half-open: --blocks 0:2 hosts blocks 0 and 1.

Examples:
  swarm serve --model stories260K.bin --blocks 0:2 --listen 127.0.0.1:7001
  swarm serve --model stories260K.gguf --blocks 2:5 --listen 127.0.0.1:0 --memory 2000000 --emulate-latency 20ms
  swarm serve --model stories260K.bin --blocks auto --identity boot.key --p2p-listen /ip4/0.0.0.0/tcp/4001
  swarm serve --model stories260K.bin --blocks auto --bootstrap /ip4/10.0.0.1/tcp/4001/p2p/12D3KooW... --memory 900000`

// serveOptions are the flags of `swarm serve` that are not server.Config.
type serveOptions struct {
	blocks    string
	logLevel  string
	logFormat string

	p2p            p2p.Config
	reg            registry.Config
	targetSessions int
	maxLength      int
	joinSettle     time.Duration
	provider       string
	cacheDType     string
	publicName     string
	announce       string
	planners       []string
	rebalance      time.Duration
	// swarm: the server joins the swarm (derived from the flags).
	swarm bool
	auto  bool
}

func newServeCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	o := serveOptions{p2p: p2p.DefaultConfig(), reg: registry.DefaultConfig(), targetSessions: defaultTargetSessions}
	var fr *fullRangeOptions // --full-range: serve_fullrange.go
	cmd := &cobra.Command{
		Use:   "serve --model PATH --blocks auto|START:END [--listen HOST:PORT|none] [--bootstrap MULTIADDR...] [flags]",
		Short: "Host a span of a model's blocks for clients",
		Long:  serveLong + fullRangeHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if o.cacheDType != "" {
				d, err := swarm.ParseDType(o.cacheDType)
				if err != nil || (d != swarm.DTypeF32 && d != swarm.DTypeF16) {
					return fmt.Errorf("%w: --cache-dtype %q, want f32 or f16", errUsage, o.cacheDType)
				}
				cfg.CacheDType = d
			}
			if fr.enabled {
				return runServeFullRange(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, o, fr, fullRangeJoins(f.Changed))
			}
			cfg.ModelName = fr.cfg.ModelName // --model-name: the block server's model name too
			if err := o.resolve(&cfg, f.Changed); err != nil {
				return err
			}
			if !f.Changed("join-settle") {
				o.joinSettle = defaultJoinSettle(o.reg)
			}
			if !o.auto && !f.Changed("rebalance-interval") {
				o.rebalance = 0 // a fixed --blocks span moves only when asked to
			}
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	f.StringVar(&cfg.Model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint, a Hugging Face directory or a hub repository ORG/REPO[@REVISION][:FILE] (HF_ENDPOINT, HF_TOKEN); only the span's blocks are read (and downloaded)")
	f.StringVar(&cfg.Tokenizer, "tokenizer", "", "tokenizer file; a server computes blocks only and never loads it (accepted so that serve and generate take the same model flags)")
	f.StringVar(&o.blocks, "blocks", "", "span of blocks to host, START:END, 0-based half-open (0:2 hosts blocks 0 and 1), or auto: chosen by\n"+
		"incremental CG-BP placement from the registry (required)")
	f.StringVar(&cfg.Device, "device", blocks.AutoBackendName, server.DeviceHelp())
	f.StringVar(&o.cacheDType, "cache-dtype", "", "element type of the attention caches (K and V), f32 or f16; empty = the device's default (f32 on cpu).\n"+
		"f16 halves the cache bytes per token (s_c), so --memory admits about twice the sessions; logits change slightly\n"+
		"(prefill and decode still agree bit for bit, so failover replay is exact when every server of a chain uses the same dtype)")
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "TCP address of the websocket, HOST:PORT; port 0 lets the OS choose (the URL is printed);\n"+
		"none: no websocket, sessions only over the /swarm/inference/1 libp2p stream")
	f.Var(cliconf.NewBytes(&cfg.MemoryBytes), "memory", fmt.Sprintf("memory M_j for block weights plus attention caches: bytes or a size (8GiB, 500MB); 0 = with a fixed span the weights plus room\n"+
		"for %d sessions of the model's whole context, with --blocks auto %.0f%% of the available memory (MemAvailable; on a GPU, of its free memory)",
		server.DefaultMemorySessions, 100*node.DefaultMemoryFraction))
	f.IntVar(&cfg.MaxSessions, "max-sessions", 0, "most sessions open at once; 0 = no cap (memory alone decides)")
	f.DurationVar(&cfg.SessionIdleTimeout, "session-idle-timeout", cfg.SessionIdleTimeout, "close a session with no step for this long, freeing its attention caches (the client reopens and replays); 0 = never")
	f.IntVar(&cfg.MaxSessionsPerConn, "max-sessions-per-conn", cfg.MaxSessionsPerConn, "most sessions open or waiting on one connection; 0 = no cap")
	f.IntVar(&cfg.MaxSessionsPerPeer, "max-sessions-per-peer", cfg.MaxSessionsPerPeer, "most sessions open or waiting from one IP address or libp2p peer (a proxy is one peer for all its users); 0 = no cap")
	f.DurationVar(&cfg.EmulateLatency, "emulate-latency", 0, "delay added before every reply frame and /v1/info answer, e.g. 20ms, to imitate a WAN link; 0 = none")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "on SIGTERM/SIGINT, how long open sessions may run before they are told to fail over; 0 = tell them at once")
	f.BoolVar(&cfg.Remeasure, "remeasure", false, "measure tau and tauI even if the measurement cache has them for this model, span and hardware")
	f.StringVar(&cfg.MeasureCacheDir, "measure-cache", "", "directory of the measurement cache (default: the user cache directory + /swarm/measure)")
	f.StringVar(&o.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", logFormatHelp)
	o.p2p.AddFlags(f)
	o.reg.AddFlags(f)
	f.IntVar(&o.targetSessions, "target-sessions", o.targetSessions, "with --blocks auto: R, the concurrent sessions the placement guarantees room for (paper 003 Sec. 3.3.1:\n"+
		"about the mean plus one standard deviation of the sessions arriving during one session); more sessions\n"+
		"mean fewer blocks per server. Every server of a model must use the same R")
	f.IntVar(&o.maxLength, "max-length", 0, "with --blocks auto: l^I_max + l_max, the tokens of one session the placement sizes the attention cache\n"+
		"s_c for (paper 003 eq. 2); 0 = the model's context. Every server of a model must use the same value")
	f.DurationVar(&o.joinSettle, "join-settle", 0, "with --blocks auto: how long to wait after announcing a tentative span before settling, so that\n"+
		"servers starting at the same moment see each other (default: max(2 heartbeats, --max-clock-skew + --anti-entropy-interval))")
	f.StringSliceVar(&o.planners, "planners", nil, "node ids of the planner group (swarm planner): move this server as its committed plans say\n"+
		"(make-before-break); a server whose own id is listed also runs a replica of the group")
	f.DurationVar(&o.rebalance, "rebalance-interval", node.DefaultRebalanceInterval, "without --planners: how often (on average, jittered, and\n"+
		"soon after registry changes) this server evaluates the swarm's CG-BP plan and takes its own move in it (decentralized\n"+
		"rebalancing); applies to --blocks auto servers, and to fixed --blocks only when given; 0 = never move")
	f.StringVar(&o.provider, "provider", "", "provider name to advertise in the registry (clients may allow only some providers)")
	f.StringVar(&o.publicName, "public-name", "", "a human name for this server, advertised in the registry and shown by swarm status (e.g. \"alice's 4090\")")
	f.StringVar(&o.announce, "announce", "", "websocket URL to advertise instead of the --listen address, ws://HOST:PORT (needed with --listen\n"+
		"0.0.0.0:PORT behind a NAT or port forward; without it such a server advertises its first non-loopback interface address)")
	fr = addFullRangeFlags(f)
	return cmd
}

// defaultJoinSettle is the settle interval of a registry timing: long
// enough for two heartbeats, and for an entry stamped by a clock up to
// MaxClockSkew behind to arrive by anti-entropy if gossip lost it.
func defaultJoinSettle(rc registry.Config) time.Duration {
	return max(2*rc.HeartbeatInterval, rc.MaxClockSkew+rc.AntiEntropyInterval)
}

// resolve checks --blocks and --listen and decides whether the server
// joins the swarm. changed reports whether a flag was given.
func (o *serveOptions) resolve(cfg *server.Config, changed func(string) bool) error {
	switch o.blocks {
	case "":
		return fmt.Errorf("%w: --blocks START:END is required, or --blocks auto (e.g. --blocks 0:2)", errUsage)
	case "auto":
		o.auto = true
		// Validate needs a span; placement replaces it.
		cfg.Blocks = node.ProbeSpan
	default:
		span, err := swarm.ParseSpan(o.blocks)
		if err != nil {
			return fmt.Errorf("%w: --blocks: %w (or auto)", errUsage, err)
		}
		cfg.Blocks = span
	}
	streamOnly := cfg.Listen == "none"
	if streamOnly {
		cfg.Listen = ""
	} else if cfg.Listen == "" {
		return fmt.Errorf("%w: --listen is empty: want HOST:PORT (e.g. 127.0.0.1:0) or none", errUsage)
	}
	if o.announce != "" {
		if streamOnly {
			return fmt.Errorf("%w: --announce with --listen none: there is no websocket to advertise (use --announce-p2p for libp2p addresses)", errUsage)
		}
		u, err := node.ParseAnnounce(o.announce)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		o.announce = u
	}
	o.swarm = o.auto || streamOnly
	for _, name := range []string{"bootstrap", "p2p-listen", "identity", "swarm-key", "announce-p2p"} {
		o.swarm = o.swarm || changed(name)
	}
	if !o.swarm {
		return nil
	}
	if err := o.p2p.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.reg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case o.targetSessions < 1:
		return fmt.Errorf("%w: --target-sessions %d, want >= 1", errUsage, o.targetSessions)
	case o.maxLength < 0:
		return fmt.Errorf("%w: --max-length %d, want >= 0 (0 = the model's context)", errUsage, o.maxLength)
	case o.joinSettle < 0:
		return fmt.Errorf("%w: --join-settle %v, want >= 0", errUsage, o.joinSettle)
	}
	return nil
}

// runServe serves until ctx ends (SIGTERM/SIGINT), then drains and returns
// nil: alone (a fixed span, no libp2p flag) or as a member of the swarm.
func runServe(ctx context.Context, out, errOut io.Writer, cfg server.Config, o serveOptions) error {
	logger, err := newLogger(errOut, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	src, err := modelsrc.Resolve(ctx, cfg.Model, hubOptions(errOut))
	if err != nil {
		return err
	}
	cfg.Model, cfg.OpenFile = src.Path, src.OpenFile()
	if o.swarm {
		return runSwarmServe(ctx, out, logger, cfg, o)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	srv, err := server.New(ctx, cfg, logger)
	if errors.Is(err, server.ErrBadConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	pages, err := node.StandalonePages(srv) // the dashboard, /api/v1/state and /metrics
	if err != nil {
		return err
	}
	srv.SetFallback(pages)
	url, err := node.AdvertiseURL(o.announce, ln.Addr().String(), false, net.InterfaceAddrs)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	info := srv.ModelInfo()
	logger.Info("serving", "model", info.Name, "blocks", cfg.Blocks.String(), "url", url,
		"info", strings.TrimSuffix(strings.Replace(url, "ws://", "http://", 1), api.InferencePath)+api.InfoPath)
	if o.announce == "" && url != "ws://"+ln.Addr().String()+api.InferencePath {
		logger.Info("listening on every interface: advertising an interface address (pass --announce ws://HOST:PORT to choose)", "listen", ln.Addr().String(), "url", url)
	}
	if _, err := fmt.Fprintln(out, launch.ServeReadyPrefix+url); err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}

// runSwarmServe joins the swarm (a libp2p node and a registry member) and
// runs node.RunServer, printing the ready lines.
func runSwarmServe(ctx context.Context, out io.Writer, logger *slog.Logger, cfg server.Config, o serveOptions) error {
	if o.auto && cfg.MemoryBytes == 0 {
		// A GPU's blocks and caches live in its own memory: offer the same
		// fraction of what it has free; the CPU offers the machine's.
		m, onDevice, err := cfg.DeviceMemory()
		switch {
		case err != nil:
			return fmt.Errorf("%w: --blocks auto: %w", errUsage, err)
		case onDevice:
			m = int64(float64(m) * node.DefaultMemoryFraction)
			logger.Info("memory from the device", "device", cfg.Device, "memory", m)
		default:
			if m, err = node.DefaultMemory(); err != nil {
				return fmt.Errorf("%w: --blocks auto: %w", errUsage, err)
			}
		}
		cfg.MemoryBytes = m
	}
	boot, err := o.p2p.BootstrapPeers()
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	var planners []peer.ID
	if len(o.planners) > 0 {
		if planners, err = parseMembers(o.planners); err != nil {
			return err
		}
	}
	n, err := p2p.New(o.p2p, p2p.WithLogger(logger))
	if err != nil {
		if errors.Is(err, p2p.ErrBadConfig) || errors.Is(err, p2p.ErrBadIdentity) || errors.Is(err, p2p.ErrBadSwarmKey) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return err
	}
	defer n.Close()
	reg, err := registry.Join(n, o.reg, registry.WithLogger(logger))
	if err != nil {
		return err
	}
	defer reg.Close()
	reach, confirmed := n.Reachability() // "p2p node started" named the id and addresses
	logger.Info("joined the node network", "bootstrap", len(boot), "reachability", string(reach), "confirmed_by_autonat", confirmed)
	sc := node.ServerConfig{
		Server: cfg, Auto: o.auto, Sessions: o.targetSessions, MaxLength: o.maxLength,
		JoinSettle: o.joinSettle, Provider: o.provider, PublicName: o.publicName, Announce: o.announce, LoadRefresh: o.reg.HeartbeatInterval, Bootstrap: boot, Planners: planners,
		Rebalance: node.RebalanceConfig{Interval: o.rebalance},
	}
	err = node.RunServer(ctx, n, reg, sc, logger, func(s node.Serving) error {
		url := s.URL
		if url == "" {
			url = api.P2PEndpoint(s.ID).Inference
		}
		line, err := json.Marshal(struct {
			ID     string   `json:"id"`
			Blocks string   `json:"blocks"`
			Addrs  []string `json:"addrs"`
		}{s.ID, s.Span.String(), s.Addrs})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s%s\n%s%s\n", launch.ServeReadyPrefix, url, launch.ServeRegistryPrefix, line)
		return err
	})
	if errors.Is(err, server.ErrBadConfig) || errors.Is(err, node.ErrBadConfig) || errors.Is(err, node.ErrPlacement) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}
