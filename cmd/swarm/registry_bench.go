package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/convergence"
)

// registryBenchOptions are the flags of `swarm registry bench`.
type registryBenchOptions struct {
	nodes string
	json  bool
	p     convergence.Params
}

const registryBenchLong = `bench measures how fast a registry write spreads. For each N in --nodes it
starts N libp2p nodes in this process on loopback, joined as in real life:
node 0 starts alone, every other node knows only node 0's address and finds
the others through the DHT rendezvous (no full mesh is wired by hand).

After a warm-up write by node 0 has reached every node, and once the
swarm's connection count has been stable for --settle, each trial (one after the other) has a new node publish its first
entry and records when each of the N-1 other nodes has merged it (by gossip
or anti-entropy). It prints, per N, the medians over the trials of the time
until 50%, 95% and 100% of the other nodes held the entry (nearest-rank
percentiles), the setup time (start and warm-up write) and the time until
the swarm had settled.

All nodes share this machine's CPUs: on a small machine the numbers include
the CPU contention of N nodes (the output names the CPU count).

Example:
  swarm registry bench --nodes 16,32,64 --trials 5`

func newRegistryBenchCmd() *cobra.Command {
	o := registryBenchOptions{nodes: "16,32,64", p: convergence.DefaultParams()}
	o.p.Registry = registry.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "bench [--nodes 16,32,64] [--trials T] [--json]",
		Short: "Measure registry convergence time on N in-process nodes",
		Long:  registryBenchLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := convergence.ParseSizes(o.nodes)
			if err != nil {
				return fmt.Errorf("%w: --nodes %q: %w", errUsage, o.nodes, err)
			}
			ps, err := o.p.ForSizes(sizes)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return runRegistryBench(cmd, o, ps)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	f.StringVar(&o.nodes, "nodes", o.nodes, "comma-separated swarm sizes N to measure, each >= 2")
	o.p.AddFlags(f)
	f.BoolVar(&o.json, "json", false, `print {"cpus": N, "gomaxprocs": N, "results": [...]} with durations in nanoseconds`)
	return cmd
}

func runRegistryBench(cmd *cobra.Command, o registryBenchOptions, ps []convergence.Params) error {
	out := cmd.OutOrStdout()
	if !o.json {
		if err := convergence.WriteTableHeader(out, o.p.Transport); err != nil {
			return err
		}
	}
	var results []convergence.Result
	for _, p := range ps {
		res, err := convergence.Measure(cmd.Context(), p)
		if err != nil {
			return err
		}
		results = append(results, res)
		if !o.json {
			if err := convergence.WriteTableRow(out, res); err != nil {
				return err
			}
		}
	}
	if o.json {
		return convergence.NewReport(o.p.Transport, results).WriteJSON(out)
	}
	return nil
}
