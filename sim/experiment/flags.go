package experiment

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/swarmllm/swarm/sim"
)

// AddFlags registers the `swarm sim` flags of o's fields on fs, with o's
// values as the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	d := *o
	fs.StringVar(&o.Scenario, "scenario", d.Scenario, "clustered (paper 003 Table 2: 2 A100s, 7 MIGs, 3 clusters) or topology (servers scattered over --topology)")
	fs.StringVar(&o.Topology, "topology", d.Topology, "topology file for --scenario topology: a Repetita .graph file or a Topology Zoo .graphml file")
	fs.StringVar(&o.GraphMLDelays, "graphml-delays", d.GraphMLDelays, "link delays of a .graphml file (it has none): fibre (great circle at 2/3 c) or repetita (Repetita's converter formula, the delays of paper 003 Table 3)")
	fs.IntVar(&o.Servers, "servers", d.Servers, "number of servers C placed at random nodes (topology scenario; 0: 40% of the nodes, as in Figs. 7-9)")
	fs.Float64Var(&o.Eta, "eta", d.Eta, "fraction of the servers that are A100s, the rest MIGs (topology scenario)")
	fs.IntVar(&o.ClientCluster, "client-cluster", d.ClientCluster, "cluster of the client (clustered scenario): 0 remote, 1 beside the A100s, 2 beside the MIGs")
	fs.Float64Var(&o.Rate, "rate", d.Rate, "session arrival rate lambda, sessions per second (Poisson)")
	fs.IntVar(&o.Requests, "requests", d.Requests, "number of sessions N_R per run")
	fs.IntVar(&o.OutputTokens, "output-tokens", d.OutputTokens, "tokens generated per session, l_max")
	fs.IntVar(&o.InputTokens, "input-tokens", d.InputTokens, "prompt tokens per session, lI")
	fs.Uint64Var(&o.Seed, "seed", d.Seed, "random seed; run k uses the PCG stream (seed, k)")
	fs.IntVar(&o.Runs, "runs", d.Runs, "Monte Carlo runs averaged (each draws arrivals, PETALS join order and, for topologies, server and client nodes)")
	fs.StringSliceVar(&o.Algorithms, "algorithms", d.Algorithms, "comma-separated algorithms: "+algorithmHelp())
	fs.StringVar(&o.Calibration, "calibration", d.Calibration, "none: the mechanism-only model (default); "+
		"matlab: also add the unexplained per-session constants of the authors' MATLAB simulator to every first token "+
		"(allocation delay 60 s for proposed, 250 s for petals and the ablations, 350 s for them in the 26-server deployment of Table 5; "+
		"initial delay 100 ms clustered, 70 ms topology) and round proposed/opt-rr waits up to PETALS back-off steps")
	fs.IntVar(&o.Parallel, "parallel", d.Parallel, "runs simulated at once (goroutines); use 1 for undisturbed runtime measurements")
	fs.StringVar(&o.Preset, "preset", d.Preset, "a deployment of paper 003 whose values fill the options not given explicitly: "+presetHelp()+
		"; the paper's numbers are printed only while the fleet matches it, with a warning otherwise")
	fs.StringVar(&o.ServerModel, "server-model", d.ServerModel, "how a server steps concurrent sessions: independent (paper 003 Sec. 2.2: they never slow each other), "+
		"serial (PETALS: one session's step at a time, a token waits for one step of every other session there), "+
		"batched (our server: one batched pass, tau x BatchFactor(sessions there), see --batch-growth); the first token is not slowed")
	fs.Float64Var(&o.BatchGrowth, "batch-growth", d.BatchGrowth, "batched server model: assumed growth of a batched step per extra session (tau(b) = tau (1 + growth (b-1))); an assumption, not an A100 measurement")
	fs.StringVar(&o.LinkCost, "link-cost", d.LinkCost, "WS-RR and opt-rr hop cost: eq8 (paper 003's all-tokens average, with prefill; its simulator) or eq4 (decode only, t_cj + k tau_j, as the live client and ingress route); PETALS routing always uses its own")
	fs.IntVar(&o.PetalsSessionTokens, "petals-session-tokens", d.PetalsSessionTokens, "attention-cache tokens a PETALS client session reserves on each block (its max_length) for petals, opt-order and opt-rr; 0: lI + l_max as the paper's model")
	fs.Float64Var(&o.MoveBandwidth, "move-bandwidth", d.MoveBandwidth, "--placement live: bytes per second a server loads replanned weights at (e.g. 1e9); "+
		"sessions arriving before the moves end are routed on the incremental placement; 0: the replanned placement serves from t = 0")
	fs.StringVar(&o.Fleet, "fleet", d.Fleet, "a swarm plan fleet file (see swarm plan --help) replacing the scenario: its servers' memory, tau, block caps and client RTTs "+
		"(first client; RTTs include all overheads; prefill costs tau per block; server-to-server RTT for PETALS routing = mean of the two client RTTs)")
	fs.StringVar(&o.Model, "model", d.Model, "a model replacing BLOOM-176B: ModelInfo JSON (swarm model info --json) or any local model file swarm reads (.gguf, llama2.c .bin, Hugging Face directory)")
	fs.StringVar(&o.Placement, "placement", d.Placement, "placement process of proposed: batch (CG-BP over the whole fleet, the paper), incremental (servers join in random order, incremental CG-BP, as serve --blocks auto), "+
		"live (incremental, then the live planner's make-before-break replanning; weight bytes moved are reported, their transfer time is not simulated)")
}

// algorithmHelp lists the algorithms with their docs.
func algorithmHelp() string {
	var parts []string
	for _, a := range sim.Algorithms() {
		parts = append(parts, fmt.Sprintf("%s (%s)", a.Name, a.Doc))
	}
	return strings.Join(parts, "; ")
}
