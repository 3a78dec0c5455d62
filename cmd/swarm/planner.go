package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

const plannerLong = `planner runs one replica of the swarm's planner group, for an institution's
always-on node: 1, 3 or 5 replicas (--members, this node's id among them,
as ` + "`swarm identity`" + ` prints it) agree through Raft over libp2p on plan epochs.
The leader replans the SERVING servers of one model from the registry
(paper 003 Alg. 2, slow time scale: CG-BP target, make-before-break moves)
when a block is uncovered or below capacity R or the idle per-token gain
exceeds --min-gain, and commits the migration; servers read committed
plans from the replicas (/swarm/plan/1). The replicated log is in memory:
a restarted replica catches up from the others (a majority must stay up).

Example:
  swarm planner --identity planner.key --p2p-listen /ip4/0.0.0.0/tcp/4002 \
      --bootstrap /ip4/10.0.0.1/tcp/4001/p2p/12D3KooW... --members ID1,ID2,ID3`

// newPlannerCmd is `swarm planner`.
func newPlannerCmd() *cobra.Command {
	p2pCfg, regCfg := p2p.DefaultConfig(), registry.DefaultConfig()
	var members []string
	cfg := node.ReplanConfig{Interval: node.DefaultReplanInterval, EpochTimeout: node.DefaultEpochTimeout}
	cfg.Options.MinGain = placement.DefaultMinGain
	cmd := &cobra.Command{
		Use:   "planner --members PEERID,... [--bootstrap MULTIADDR...] [flags]",
		Short: "Run a replica of the planner group that replans the live swarm (Raft over libp2p)",
		Long:  plannerLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ids, err := parseMembers(members)
			if err != nil {
				return err
			}
			if err := errors.Join(p2pCfg.Validate(), regCfg.Validate()); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			m, err := node.Join(p2pCfg, regCfg, log)
			if err != nil {
				return err
			}
			defer m.Close()
			if err := node.RunPlanner(cmd.Context(), m.Node, m.Registry, ids, cfg, log); !errors.Is(err, context.Canceled) {
				return err // SIGINT/SIGTERM end it cleanly
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	p2pCfg.AddFlags(f)
	regCfg.AddFlags(f)
	f.StringSliceVar(&members, "members", nil, "node ids of the planner group's replicas (1, 3 or 5, this node among them), comma-separated (required)")
	f.StringVar(&cfg.Model, "model", "", "model to replan (needed when the registry serves several)")
	f.IntVar(&cfg.Sessions, "target-sessions", 0, "R; 0 = what the servers were placed with (--blocks auto)")
	f.IntVar(&cfg.MaxLength, "max-length", 0, "l^I_max + l_max sizing s_c, tokens; 0 = what the servers were placed with")
	f.Float64Var(&cfg.Options.MinGain, "min-gain", cfg.Options.MinGain, "relative idle per-token gain a migration must exceed when every block is covered with capacity R")
	f.DurationVar(&cfg.Interval, "interval", cfg.Interval, "how often the leader evaluates the fleet, besides every registry change")
	f.DurationVar(&cfg.EpochTimeout, "epoch-timeout", cfg.EpochTimeout, "abort an epoch still active this long after it was committed")
	return cmd
}

// parseMembers decodes --members.
func parseMembers(members []string) ([]peer.ID, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("%w: --members PEERID,... is required (1, 3 or 5 node ids; see swarm identity)", errUsage)
	}
	ids := make([]peer.ID, len(members))
	for i, s := range members {
		id, err := peer.Decode(s)
		if err != nil {
			return nil, fmt.Errorf("%w: --members %q: not a node id: %w", errUsage, s, err)
		}
		ids[i] = id
	}
	return ids, nil
}
