package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// RunPlanner runs this node's replica of the planner group (members, 1, 3
// or 5 node ids, this node among them) until ctx ends: it serves the
// committed plans to servers over planner.PlanProtocol and, while it leads
// the group, replans the registry's fleet (ReplanLoop). It returns ctx's
// error after closing the replica, or the error that kept it from starting.
func RunPlanner(ctx context.Context, n *p2p.Node, reg *registry.Registry, members []peer.ID, cfg ReplanConfig, log *slog.Logger, opts ...planner.Option) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, err := planner.Start(ctx, n.Host(), members, append([]planner.Option{planner.WithLogger(log)}, opts...)...)
	if err != nil {
		return fmt.Errorf("node: planner replica: %w", err)
	}
	r.ServePlans()
	log.Info("planner replica serving", "members", len(members), "replica", r.ID())
	err = ReplanLoop(ctx, r, n.ID().String(), reg, cfg, log)
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, r.Close(closeCtx))
}
