package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// statusOptions are the flags of `swarm status`.
type statusOptions struct {
	p2p  p2p.Config
	reg  registry.Config
	json bool
	wait time.Duration
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
sorted by id.

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
	if o.json {
		return writeStatusJSON(cmd.OutOrStdout(), entries)
	}
	return writeStatusTable(cmd.OutOrStdout(), entries)
}

// statusServer is one element of `swarm status --json`.
type statusServer struct {
	ID             string  `json:"id"`
	Provider       string  `json:"provider"`
	Model          string  `json:"model"`
	Start          int     `json:"start"`
	End            int     `json:"end"`
	State          string  `json:"state"`
	Tau            float64 `json:"tau"`
	Sessions       int     `json:"sessions"`
	CacheFreeBytes int64   `json:"cache_free_bytes"`
	HeartbeatAgeS  float64 `json:"heartbeat_age_s"` // now - its last stamp: < 0 when its clock runs ahead
	// Device and TauBatch (seconds per block by batch size) as the server advertises them.
	Device   string           `json:"device,omitempty"`
	TauBatch []swarm.BatchTau `json:"tau_batch,omitempty"`
}

func writeStatusJSON(w io.Writer, entries []registry.Entry) error {
	out := struct {
		Servers []statusServer `json:"servers"`
	}{Servers: []statusServer{}}
	for _, e := range entries {
		out.Servers = append(out.Servers, statusServer{
			ID:             e.NodeID,
			Provider:       e.Info.Provider,
			Model:          e.Info.Model,
			Start:          e.Info.Span.Start,
			End:            e.Info.Span.End,
			State:          e.State.String(),
			Tau:            e.Info.Tau,
			Sessions:       len(e.Info.Sessions),
			CacheFreeBytes: e.Info.CacheBytesFree,
			HeartbeatAgeS:  time.Since(e.Heartbeat).Seconds(),
			Device:         e.Info.Device, TauBatch: e.Info.TauBatch,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeStatusTable(w io.Writer, entries []registry.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPROVIDER\tMODEL\tSPAN\tSTATE\tTAU\tSESSIONS\tCACHE FREE\tHEARTBEAT AGE")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%v\n", e.NodeID, dash(e.Info.Provider), dash(e.Info.Model), e.Info.Span,
			e.State, time.Duration(e.Info.Tau*float64(time.Second)), len(e.Info.Sessions), e.Info.CacheBytesFree, time.Since(e.Heartbeat).Round(100*time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "(no servers in the registry)")
		return err
	}
	for _, c := range node.BlockCoverage(entries) {
		if _, err := fmt.Fprintln(w, c.String()); err != nil {
			return err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
