package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/registry/convergence"
)

// registryBenchOptions are the flags of `swarm registry bench`.
type registryBenchOptions struct {
	nodes     string
	trials    int
	transport string
	timeout   time.Duration
	settle    time.Duration
	json      bool
	reg       registry.Config
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
	o := registryBenchOptions{nodes: "16,32,64", trials: 5, transport: "tcp", timeout: time.Minute, settle: 5 * time.Second, reg: registry.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "bench [--nodes 16,32,64] [--trials T] [--json]",
		Short: "Measure registry convergence time on N in-process nodes",
		Long:  registryBenchLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := parseSizes(o.nodes)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			var ps []convergence.Params
			for _, n := range sizes {
				p := convergence.DefaultParams()
				p.Nodes, p.Trials, p.Transport, p.Timeout, p.Settle, p.Registry = n, o.trials, o.transport, o.timeout, o.settle, o.reg
				if err := p.Validate(); err != nil {
					return fmt.Errorf("%w: %w", errUsage, err)
				}
				ps = append(ps, p)
			}
			return runRegistryBench(cmd, o, ps)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	f.StringVar(&o.nodes, "nodes", o.nodes, "comma-separated swarm sizes N to measure, each >= 2")
	f.IntVar(&o.trials, "trials", o.trials, "writes measured per swarm size, each by a different node (1..N-1)")
	f.StringVar(&o.transport, "transport", o.transport, "libp2p transport between the nodes: tcp or quic")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "per trial: nodes still without the entry after this count as missing")
	f.DurationVar(&o.settle, "settle", o.settle, "start the trials once the swarm's connection count has not changed for this long\n(discovery and the DHT have finished connecting the nodes); 0: right after the warm-up write")
	f.BoolVar(&o.json, "json", false, `print {"cpus": N, "gomaxprocs": N, "results": [...]} with durations in nanoseconds`)
	o.reg.AddFlags(f)
	return cmd
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("--nodes %q: %q is not a swarm size >= 2", s, part)
		}
		out = append(out, n)
	}
	return out, nil
}

func runRegistryBench(cmd *cobra.Command, o registryBenchOptions, ps []convergence.Params) error {
	var results []convergence.Result
	out := cmd.OutOrStdout()
	const row = "%6v %7v %12v %12v %12v %8v %10v %10v\n"
	if !o.json {
		fmt.Fprintf(out, "registry convergence on loopback (%s), all nodes in one process; %d CPUs, GOMAXPROCS %d\n",
			o.transport, runtime.NumCPU(), runtime.GOMAXPROCS(0))
		fmt.Fprintf(out, row, "NODES", "TRIALS", "P50", "P95", "P100", "MISSING", "SETUP", "SETTLED")
	}
	for _, p := range ps {
		res, err := convergence.Measure(cmd.Context(), p)
		if err != nil {
			return err
		}
		results = append(results, res)
		if !o.json {
			fmt.Fprintf(out, row, res.Nodes, len(res.Trials), res.P50.Round(10*time.Microsecond),
				res.P95.Round(10*time.Microsecond), res.P100.Round(10*time.Microsecond), res.Missing,
				res.Setup.Round(time.Millisecond), res.Settled.Round(time.Millisecond))
		}
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			CPUs       int                  `json:"cpus"`
			GOMAXPROCS int                  `json:"gomaxprocs"`
			Transport  string               `json:"transport"`
			Results    []convergence.Result `json:"results"`
		}{runtime.NumCPU(), runtime.GOMAXPROCS(0), o.transport, results})
	}
	return nil
}
