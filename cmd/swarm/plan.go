package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/placement"
)

// planOptions are the flags of `swarm plan`.
type planOptions struct {
	config         string
	algorithm      string
	json           bool
	targetSessions int
	targetSet      bool
	maxLength      int
	maxLengthSet   bool
	compareRandom  int
	compareSet     bool
	seed           uint64
}

const planLong = `plan reads a fleet (a model, clients and servers with their memory, speed and
round trip times), places blocks on the servers with the chosen algorithm and
prints each server's span, the feasibility verdict (condition 18 of Sun, He,
Ji, Parag 2025), the target number of concurrent sessions R, the bounds on
the average per-token time (17) (upper, for CG-BP), (B.8) and the exact
single-session bound (lower, for any placement; the latter charges the full
RTT of every hop, a knapsack over servers), and for each client the route a new session takes on an idle
swarm with its per-token time (eq. 4: sum over hops of RTT + tau x blocks).

Algorithms (--algorithm):
  cgbp        Conservative Greedy Block Placement (Alg. 1/2), routed by WS-RR
  petals      PETALS' heuristic (fixed cache budget, throughput-based
              windows, servers in file order), routed by PETALS' Dijkstra
  opt-order   PETALS placement in CG-BP's server order (ablation, Sec. 4.3)
  opt-number  PETALS placement with CG-BP's block counts (ablation)
  optimal     exhaustive optimum of BPRR (6), tiny fleets only, routed by WS-RR
  refined     CG-BP improved by local search over spans and R (no LP/MILP):
              never worse than CG-BP by the optimal routing (16), routed
              by WS-RR

--compare-random N compares cgbp and refined with optimal on N random tiny
fleets of each of the distributions uniform, two-class, identical (see
placement.RandomTinyFleet) and prints the ratios to the optimum (median,
p90, max); it needs no --config.

` + fleet.Schema + `
Columns: SESSIONS f_j is eq. (15), the sessions a server holds when each uses
all its blocks; CACHE SLOTS is the block attention caches it admits (memory
left after the blocks; for the PETALS family, PETALS' fixed budget).

The lower bound (B.8) is averaged over R sessions split evenly across the
clients (the first clients get the remainder); --algorithm optimal uses the
same split. Spans are 0-based and half-open ("0:41" is blocks 0..40). An infeasible fleet
is not an error: the output says so (feasible: false) and the command exits 0.

Examples:
  swarm plan --config fleet.json
  swarm plan --config fleet.json --algorithm petals --json
  swarm plan --config fleet.json --target-sessions 20
  swarm plan --compare-random 200 --seed 16`

func newPlanCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan --config FLEET.json [--algorithm cgbp|petals|optimal|refined|opt-order|opt-number] [--json]",
		Short: "Place blocks on a fleet (CG-BP, PETALS, ...) and print spans, bounds and routes",
		Long:  planLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.targetSet = cmd.Flags().Changed("target-sessions")
			o.maxLengthSet = cmd.Flags().Changed("max-length")
			o.compareSet = cmd.Flags().Changed("compare-random")
			return runPlan(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "fleet file (JSON, schema above); required")
	f.StringVar(&o.algorithm, "algorithm", "cgbp", "placement algorithm: "+strings.Join(placement.Names(), ", "))
	f.BoolVar(&o.json, "json", false, "print machine-readable JSON: feasible, target_sessions, servers (name, start, end), upper_bound, lower_bound, session_bound, routes (chain, per_token)")
	f.IntVar(&o.targetSessions, "target-sessions", 0, "R, the concurrent sessions to plan for; overrides the fleet file's target_sessions / arrival_rate")
	f.IntVar(&o.maxLength, "max-length", 0, "l_max, tokens generated per session, weighing waiting against per-token time in WS-RR's link cost (default: the fleet's max_length, else 128)")
	f.IntVar(&o.compareRandom, "compare-random", 0, "instead of planning a fleet, compare cgbp and refined with optimal on this many random tiny fleets per distribution and print the ratios")
	f.Uint64Var(&o.seed, "seed", 1, "random seed of --compare-random")
	return cmd
}

func runPlan(out io.Writer, o planOptions) error {
	if o.compareSet {
		return runCompareRandom(out, o)
	}
	if o.config == "" {
		return fmt.Errorf("%w: --config FLEET.json is required", errUsage)
	}
	if _, err := placement.Lookup(o.algorithm); err != nil {
		return fmt.Errorf("%w: --algorithm: %w", errUsage, err)
	}
	if o.targetSet && o.targetSessions < 1 {
		return fmt.Errorf("%w: --target-sessions %d, want >= 1", errUsage, o.targetSessions)
	}
	if o.maxLengthSet && o.maxLength < 1 {
		return fmt.Errorf("%w: --max-length %d, want >= 1", errUsage, o.maxLength)
	}
	fl, err := fleet.Load(o.config)
	if err != nil && !errors.Is(err, fleet.ErrBadFleet) {
		return fmt.Errorf("--config: %w", err)
	} else if err != nil {
		return err
	}
	r, source := o.targetSessions, "--target-sessions"
	if !o.targetSet {
		r, source, err = fl.ChooseSessions()
		if errors.Is(err, fleet.ErrNoSessions) {
			return &fleet.Error{Path: o.config, Err: errors.New("no target sessions: set target_sessions (or arrival_rate and session_time) in the file, or pass --target-sessions")}
		} else if err != nil {
			return err
		}
	}
	p, err := fl.Plan(fleet.Options{Algorithm: o.algorithm, Sessions: r, Source: source, MaxLength: o.maxLength})
	if err != nil {
		return err
	}
	if o.json {
		return p.WriteJSON(out)
	}
	return p.WriteText(out)
}

// runCompareRandom prints placement.CompareWithOptimal for every
// distribution (text, or JSON with --json).
func runCompareRandom(out io.Writer, o planOptions) error {
	if o.compareRandom < 1 {
		return fmt.Errorf("%w: --compare-random %d, want >= 1 fleets", errUsage, o.compareRandom)
	}
	if o.config != "" {
		return fmt.Errorf("%w: --compare-random draws its own fleets; drop --config", errUsage)
	}
	var cs []placement.Comparison
	for _, d := range placement.TinyFleetDistributions {
		c, err := placement.CompareWithOptimal(o.compareRandom, o.seed, d)
		if err != nil {
			return fmt.Errorf("compare %s fleets: %w", d, err)
		}
		cs = append(cs, c)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(cs)
	}
	fmt.Fprintf(out, "per-token time / optimum's (optimal routing (16) under each placement), %d random tiny fleets per distribution, seed %d:\n", o.compareRandom, o.seed)
	_, err := io.WriteString(out, placement.FormatComparisons(cs))
	return err
}
