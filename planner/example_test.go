package planner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/swarm"
)

// Example shows a replica's life: start on the node's host, propose the
// next epoch when leading, follow the committed plans, report a move.
func Example() {
	var h host.Host       // the node's libp2p host (p2p.Node.Host())
	var members []peer.ID // the group's 3 replicas, the same list on each
	if h == nil {
		return // (no host in this example)
	}
	ctx := context.Background()
	r, err := planner.Start(ctx, h, members, planner.WithRTT(50*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx)

	if leader, ok := r.Leader(); ok && leader == h.ID() {
		cur, err := r.Current(ctx) // linearizable: the latest committed epoch
		if err != nil {
			panic(err)
		}
		next := planner.Plan{
			Epoch:      cur.Epoch + 1,
			ProposalID: fmt.Sprintf("%s/%d", h.ID(), cur.Epoch+1),
			Assignment: map[string]swarm.Span{"server-a": {Start: 0, End: 16}},
			Moves:      []planner.Move{{Server: "server-a", From: swarm.Span{Start: 16, End: 32}, To: swarm.Span{Start: 0, End: 16}}},
		}
		if err := r.Propose(ctx, next); err != nil {
			fmt.Println("not committed:", err) // e.g. planner.ErrWrongEpoch: another plan won
		}
	}
	for plan := range r.Watch(ctx) {
		if plan.Status == planner.StatusActive {
			// A server executes its own move, then reports it.
			_ = r.Report(ctx, plan.Epoch, "server-a", planner.Progress{State: planner.MoveDone})
		}
	}
}
