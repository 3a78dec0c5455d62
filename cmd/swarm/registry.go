package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

func newRegistryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Registry tools: convergence benchmark (and a debugging announcer)",
		Long: `registry groups tools for the swarm's CRDT registry:

  swarm registry bench      measure how fast a write spreads through N nodes
  swarm registry announce   (debugging) publish a hand-written entry and
                            heartbeat it until interrupted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRegistryBenchCmd(), newRegistryAnnounceCmd())
	return cmd
}

// announceOptions are the flags of `swarm registry announce`.
type announceOptions struct {
	p2p         p2p.Config
	reg         registry.Config
	model       string
	blocks      string
	modelBlocks int
	state       string
	tau         float64
	provider    string
	memory      int64
	cacheCap    int64
	cacheFree   int64
	cacheTok    int64
	sessions    int
	endpoints   []string
	noLeave     bool
}

const announceLong = `announce joins the swarm like a server and publishes a registry entry made
from its flags, without loading a model or serving anything, then heartbeats
it until SIGINT/SIGTERM, when it announces LEFT (unless --no-leave) and
exits. It is a debugging and testing tool: it lets ` + "`swarm status`" + ` and
routing be exercised with real processes before ` + "`swarm serve`" + ` publishes
real entries.

When the entry is published it prints one JSON line on stdout:
  {"id": PEERID, "session": ID, "addrs": ["/ip4/.../tcp/.../p2p/PEERID", ...]}
whose addrs other nodes can pass to --bootstrap.`

func newRegistryAnnounceCmd() *cobra.Command {
	o := announceOptions{p2p: p2p.DefaultConfig(), reg: registry.DefaultConfig(), state: "SERVING"}
	cmd := &cobra.Command{
		Use:    "announce --model NAME --blocks START:END [flags]",
		Short:  "Publish a hand-written registry entry (debugging)",
		Long:   announceLong,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, state, err := o.entry()
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if err := o.p2p.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if err := o.reg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return runAnnounce(cmd, o, info, state)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	o.p2p.AddFlags(f)
	o.reg.AddFlags(f)
	f.StringVar(&o.model, "model", "", "model name to advertise, e.g. stories260K (required)")
	f.StringVar(&o.blocks, "blocks", "", "span to advertise, 0-based half-open START:END, e.g. 0:2 (required)")
	f.IntVar(&o.modelBlocks, "model-blocks", 0, "L, the model's number of blocks (0: unknown)")
	f.StringVar(&o.state, "state", o.state, "lifecycle state to announce: JOIN, SERVING or DOWN")
	f.Float64Var(&o.tau, "tau", 0, "tau, decode seconds per block per token to advertise")
	f.StringVar(&o.provider, "provider", "", "provider name to advertise")
	f.Int64Var(&o.memory, "memory", 0, "memory bytes M_j to advertise")
	f.Int64Var(&o.cacheCap, "cache-capacity-bytes", 0, "attention-cache capacity in bytes to advertise")
	f.Int64Var(&o.cacheFree, "cache-free-bytes", 0, "free attention-cache bytes to advertise")
	f.Int64Var(&o.cacheTok, "cache-bytes-per-token", 0, "attention-cache bytes per block per token to advertise")
	f.IntVar(&o.sessions, "sessions", 0, "number of open sessions to advertise (each holding the whole span, 0 s remaining)")
	f.StringSliceVar(&o.endpoints, "endpoint", nil, "endpoint to advertise (ws://HOST:PORT or a multiaddr), repeatable")
	f.BoolVar(&o.noLeave, "no-leave", false, "exit without announcing LEFT (as a crash would)")
	return cmd
}

// entry builds the ServerInfo and state from the flags.
func (o announceOptions) entry() (swarm.ServerInfo, swarm.LifecycleState, error) {
	if o.model == "" {
		return swarm.ServerInfo{}, 0, fmt.Errorf("--model is required")
	}
	span, err := swarm.ParseSpan(o.blocks)
	if err != nil {
		return swarm.ServerInfo{}, 0, fmt.Errorf("--blocks: %w", err)
	}
	if o.modelBlocks < 0 || (o.modelBlocks > 0 && span.End > o.modelBlocks) {
		return swarm.ServerInfo{}, 0, fmt.Errorf("--model-blocks %d, want 0 or >= the span end %d", o.modelBlocks, span.End)
	}
	var state swarm.LifecycleState
	if err := state.UnmarshalText([]byte(o.state)); err != nil || state == swarm.StateSuspected || state == swarm.StateLeft {
		return swarm.ServerInfo{}, 0, fmt.Errorf("--state %q, want JOIN, SERVING or DOWN", o.state)
	}
	switch {
	case o.tau < 0:
		return swarm.ServerInfo{}, 0, fmt.Errorf("--tau %g, want >= 0 seconds", o.tau)
	case o.memory < 0 || o.cacheCap < 0 || o.cacheFree < 0 || o.cacheTok < 0:
		return swarm.ServerInfo{}, 0, fmt.Errorf("--memory, --cache-capacity-bytes, --cache-free-bytes and --cache-bytes-per-token must be >= 0")
	case o.sessions < 0:
		return swarm.ServerInfo{}, 0, fmt.Errorf("--sessions %d, want >= 0", o.sessions)
	}
	info := swarm.ServerInfo{
		Model:              o.model,
		Span:               span,
		ModelBlocks:        o.modelBlocks,
		Tau:                o.tau,
		MemoryBytes:        o.memory,
		CacheBytesCapacity: o.cacheCap,
		CacheBytesFree:     o.cacheFree,
		CacheBytesPerToken: o.cacheTok,
		Provider:           o.provider,
		Endpoints:          o.endpoints,
		ProtocolVersion:    swarm.ProtocolVersion,
	}
	for range o.sessions {
		info.Sessions = append(info.Sessions, swarm.SessionLoad{Remaining: 0, Caches: span.Len()})
	}
	return info, state, nil
}

func runAnnounce(cmd *cobra.Command, o announceOptions, info swarm.ServerInfo, state swarm.LifecycleState) error {
	m, err := node.Join(o.p2p, o.reg, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	reg := m.Registry
	if err := reg.Publish(info, state); err != nil {
		return err
	}
	var addrs []string
	for _, a := range m.Node.Addrs() {
		addrs = append(addrs, a.String())
	}
	line, err := json.Marshal(struct {
		ID      string   `json:"id"`
		Session string   `json:"session"`
		Addrs   []string `json:"addrs"`
	}{reg.ID(), reg.Session(), addrs})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(cmd.OutOrStdout(), string(line)); err != nil {
		return err
	}
	<-cmd.Context().Done()
	if o.noLeave {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := reg.Leave(ctx); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "swarm: announcing LEFT: %v\n", err)
	}
	return nil
}
