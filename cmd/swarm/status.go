package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// statusOptions are the flags of `swarm status`.
type statusOptions struct {
	p2p                 p2p.Config
	reg                 registry.Config
	json, fleet         bool
	model               string
	planners            []string
	sessions, maxLength int
	wait                time.Duration
}

const statusLong = `status joins the swarm as a client-only node (it publishes nothing), fetches
the registry from a bootstrap peer (an anti-entropy pull; --wait bounds how
long it tries) and prints it: one row per node with its provider, model,
span (0-based, half-open START:END), lifecycle state, tau (decode seconds per
block per token), open sessions and free attention-cache bytes, then per
model the number of SERVING servers holding each block.

States: JOIN (loading), SERVING (routable), SUSPECTED (silent for longer than
--suspect-after; not routable, refuted by its next heartbeat), DOWN (its
serving process failed), LEFT (announced, or silent for longer than
--left-after).

--json prints
  {"servers": [{"id": PEERID, "provider": P, "model": M, "start": S, "end": E,
                "state": "SERVING", "tau": SECONDS, "sessions": N,
                "cache_free_bytes": BYTES, "device": "cpu",
                "tau_batch": [{"batch": B, "tau": SECONDS}, ...]}, ...]}
sorted by id. --fleet prints the live fleet as a fleet file instead, to
compare the live spans with ` + "`swarm plan --config FILE --algorithm cgbp`" + `.

Example:
  swarm status --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... --json`

func newStatusCmd() *cobra.Command {
	o := statusOptions{p2p: p2p.DefaultConfig(), reg: registry.DefaultConfig(), wait: 10 * time.Second}
	o.p2p.DHTMode = p2p.DHTModeClient
	cmd := &cobra.Command{
		Use:   "status --bootstrap MULTIADDR... [--json]",
		Short: "Print the swarm's registry: servers, spans, states and block coverage",
		Long:  statusLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.p2p.Bootstrap) == 0 {
				return fmt.Errorf("%w: --bootstrap MULTIADDR is required (a swarm node's address ending in /p2p/PEERID)", errUsage)
			}
			if o.wait <= 0 {
				return fmt.Errorf("%w: --wait %v, want > 0", errUsage, o.wait)
			}
			if err := o.p2p.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if err := o.reg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return runStatus(cmd, o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	o.p2p.AddFlags(f)
	o.reg.AddFlags(f)
	_ = f.MarkHidden("heartbeat-interval") // status publishes nothing
	f.BoolVar(&o.json, "json", false, "print the registry as JSON (see above) instead of a table")
	f.StringSliceVar(&o.planners, "planners", nil, "node ids of the planner group: also print the committed plan epoch and its moves")
	f.BoolVar(&o.fleet, "fleet", false, "print the SERVING block servers of one model as a fleet file for swarm plan, each with its current span")
	f.StringVar(&o.model, "model", "", "with --fleet: the model (needed when the registry serves several)")
	f.IntVar(&o.sessions, "target-sessions", 0, "with --fleet: R; 0 = what the servers were placed with (--blocks auto)")
	f.IntVar(&o.maxLength, "max-length", 0, "with --fleet: l^I_max + l_max sizing s_c, tokens; 0 = what the servers were placed with")
	f.DurationVar(&o.wait, "wait", o.wait, "give up when no bootstrap peer has answered and sent its registry within this time")
	return cmd
}

func runStatus(cmd *cobra.Command, o statusOptions) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), o.wait)
	defer cancel()
	m, err := node.Join(o.p2p, o.reg, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	reg := m.Registry
	if err := node.SyncRegistry(ctx, m.Node, reg); err != nil {
		return fmt.Errorf("status: %w (--wait %v)", err, o.wait)
	}
	entries := reg.Snapshot()
	for id, off := range reg.ClockOffsets() { // entries stamped ahead of this clock are refused: say so
		if off > o.reg.MaxClockSkew {
			fmt.Fprintf(cmd.ErrOrStderr(), "status: node %s is refused: its clock runs %v ahead of this one (--max-clock-skew %v)\n", id, off, o.reg.MaxClockSkew)
		}
	}
	if o.fleet {
		ff, err := node.LiveFleet(entries, o.model, o.sessions, o.maxLength)
		if err != nil {
			return fmt.Errorf("status --fleet: %w", err)
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(ff)
	}
	if o.json {
		return node.WriteStatusJSON(cmd.OutOrStdout(), entries)
	}
	if err := node.WriteStatusTable(cmd.OutOrStdout(), entries); err != nil || len(o.planners) == 0 {
		return err
	}
	ids, err := parseMembers(o.planners)
	if err != nil {
		return err
	}
	pc, err := planner.NewClient(m.Node.Host(), ids)
	if err != nil {
		return err
	}
	p, err := pc.Current(ctx)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return node.WritePlan(cmd.OutOrStdout(), p)
}
