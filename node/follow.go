package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/swarmllm/swarm/planner"
)

// PlanPollInterval is how often a server reads the committed plan.
const PlanPollInterval = 2 * time.Second

// followPlans starts, until ctx ends, the execution of this server's moves
// of the planner group's committed plans (ExecutePlans with mv), and, when
// this node is a member of the group, its replica (ServePlans, ReplanLoop).
// stop waits for them and closes the replica.
func (j *joiner) followPlans(ctx context.Context, mv Mover) (stop func() error, err error) {
	self := j.n.ID()
	var src PlanSource
	var r *planner.Replica
	if slices.Contains(j.cfg.Planners, self) {
		if r, err = planner.Start(ctx, j.n.Host(), j.cfg.Planners, planner.WithLogger(j.log)); err != nil {
			return nil, fmt.Errorf("node: planner replica: %w", err)
		}
		r.ServePlans()
		src = ReplicaSource{Replica: r, Self: self.String()}
	} else if src, err = planner.NewClient(j.n.Host(), j.cfg.Planners); err != nil {
		return nil, err
	}
	if j.pages != nil {
		j.pages.plans.Store(&planSource{src})
	}
	var wg sync.WaitGroup
	if r != nil {
		rc := j.cfg.Replan
		if rc.Sessions == 0 { // this server's own R and length, as servers placed with it advertise
			rc.Sessions = j.cfg.Sessions
		}
		if rc.MaxLength == 0 {
			rc.MaxLength = cmp.Or(j.cfg.MaxLength, j.model.MaxSeqLen)
		}
		wg.Go(func() { _ = ReplanLoop(ctx, r, self.String(), j.reg, rc, j.log) })
	}
	wg.Go(func() { _ = ExecutePlans(ctx, src, self.String(), mv, PlanPollInterval, j.log) })
	j.log.Info("following the planner group", "members", len(j.cfg.Planners), "replica", r != nil)
	return func() error {
		wg.Wait()
		if r == nil {
			return nil
		}
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return r.Close(cctx)
	}, nil
}
