package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// errBadFleet marks a fleet file that does not follow the schema.
var errBadFleet = errors.New("bad fleet file")

// planOptions are the flags of `swarm plan`.
type planOptions struct {
	config         string
	algorithm      string
	json           bool
	targetSessions int
	targetSet      bool
	maxLength      int
	maxLengthSet   bool
}

const planLong = `plan reads a fleet (a model, clients and servers with their memory, speed and
round trip times), places blocks on the servers with the chosen algorithm and
prints each server's span, the feasibility verdict (condition 18 of Sun, He,
Ji, Parag 2025), the target number of concurrent sessions R, the bounds on
the average per-token time (17) (upper, for CG-BP) and (B.8) (lower, for any
placement), and for each client the route a new session takes on an idle
swarm with its per-token time (eq. 4: sum over hops of RTT + tau x blocks).

Algorithms (--algorithm):
  cgbp        Conservative Greedy Block Placement (Alg. 1/2), routed by WS-RR
  petals      PETALS' heuristic (fixed cache budget, throughput-based
              windows, servers in file order), routed by PETALS' Dijkstra
  opt-order   PETALS placement in CG-BP's server order (ablation, Sec. 4.3)
  opt-number  PETALS placement with CG-BP's block counts (ablation)
  optimal     exhaustive optimum of BPRR (6), tiny fleets only, routed by WS-RR

Fleet file (JSON; units: bytes and seconds; unknown fields are errors):
  {
    "model": {"blocks": 70,                    L, transformer blocks
              "block_bytes": 1.32e9,           s_m, bytes of one block
              "cache_bytes_per_block": 8.5e6}, s_c, attention-cache bytes of
                                               one block for one session
    "target_sessions": 10,     R, concurrent sessions to guarantee; or instead
    "arrival_rate": 0.5,       sessions per second and
    "session_time": 160,       seconds per session: R = round(mean + std) of
                               the Poisson arrivals in one session, capped by
                               (19) (the paper's rule, Sec. 3.3.1)
    "max_length": 128,         l_max, tokens generated per session (optional)
    "clients": ["c0", "c1"],
    "petals": {"cache_bytes_per_block": 234881024,   optional: PETALS' fixed
               "reserved_bytes": 2147483648},        cache budget and reserve
    "servers": [
      {"name": "a100-1",
       "memory_bytes": 8.0e10,           M_j, memory for blocks and caches
       "tau": 0.0032,                    tau_j, seconds per block per token
       "rtt": {"c0": 0.1, "c1": 0.005},  t_cj, per-token RTT to every client
       "max_blocks": 4,                  optional cap on hosted blocks
       "forward_rps": 300,               optional PETALS throughput (1/tau)
       "network_rps": 100}               optional PETALS network cap (none)
    ]
  }
Byte counts may be written 1.32e9 but must be whole numbers.

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
  swarm plan --config fleet.json --target-sessions 20`

func newPlanCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan --config FLEET.json [--algorithm cgbp|petals|optimal|opt-order|opt-number] [--json]",
		Short: "Place blocks on a fleet (CG-BP, PETALS, ...) and print spans, bounds and routes",
		Long:  planLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.targetSet = cmd.Flags().Changed("target-sessions")
			o.maxLengthSet = cmd.Flags().Changed("max-length")
			return runPlan(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "fleet file (JSON, schema above); required")
	f.StringVar(&o.algorithm, "algorithm", "cgbp", "placement algorithm: "+strings.Join(placement.Names(), ", "))
	f.BoolVar(&o.json, "json", false, "print machine-readable JSON: feasible, target_sessions, servers (name, start, end), upper_bound, lower_bound, routes (chain, per_token)")
	f.IntVar(&o.targetSessions, "target-sessions", 0, "R, the concurrent sessions to plan for; overrides the fleet file's target_sessions / arrival_rate")
	f.IntVar(&o.maxLength, "max-length", 0, "l_max, tokens generated per session, weighing waiting against per-token time in WS-RR's link cost (default: the fleet's max_length, else 128)")
	return cmd
}

// fleetFile is the JSON fleet schema of `swarm plan`.
type fleetFile struct {
	Model struct {
		Blocks     int      `json:"blocks"`
		BlockBytes *float64 `json:"block_bytes"`
		CacheBytes *float64 `json:"cache_bytes_per_block"`
	} `json:"model"`
	TargetSessions *int     `json:"target_sessions"`
	ArrivalRate    *float64 `json:"arrival_rate"`
	SessionTime    *float64 `json:"session_time"`
	MaxLength      int      `json:"max_length"`
	Clients        []string `json:"clients"`
	Petals         *struct {
		CacheBytesPerBlock float64 `json:"cache_bytes_per_block"`
		ReservedBytes      float64 `json:"reserved_bytes"`
	} `json:"petals"`
	Servers []struct {
		Name        string             `json:"name"`
		MemoryBytes *float64           `json:"memory_bytes"`
		Tau         *float64           `json:"tau"`
		RTT         map[string]float64 `json:"rtt"`
		MaxBlocks   int                `json:"max_blocks"`
		ForwardRPS  float64            `json:"forward_rps"`
		NetworkRPS  float64            `json:"network_rps"`
	} `json:"servers"`
}

// fleet is a parsed fleet: the placement input without R, and how to get R.
type fleet struct {
	in        placement.Input
	target    int // target_sessions, 0 if absent
	rate      float64
	session   float64
	maxLength int
}

// loadFleet reads and validates a fleet file, naming the bad field.
func loadFleet(path string) (fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return fleet{}, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ff fleetFile
	if err := dec.Decode(&ff); err != nil {
		return fleet{}, fmt.Errorf("%w: %s: %w", errBadFleet, path, err)
	}
	fl, err := ff.convert()
	if err != nil {
		return fleet{}, fmt.Errorf("%w: %s: %w", errBadFleet, path, err)
	}
	return fl, nil
}

func (ff fleetFile) convert() (fleet, error) {
	var fl fleet
	in := &fl.in
	in.Model.Blocks = ff.Model.Blocks
	if ff.Model.Blocks <= 0 {
		return fl, fmt.Errorf("model.blocks = %d, want the number of transformer blocks L > 0", ff.Model.Blocks)
	}
	var err error
	if in.Model.BlockBytes, err = wholeBytes("model.block_bytes", ff.Model.BlockBytes, true); err != nil {
		return fl, err
	}
	if in.Model.CacheBytes, err = wholeBytes("model.cache_bytes_per_block", ff.Model.CacheBytes, true); err != nil {
		return fl, err
	}
	switch {
	case ff.TargetSessions != nil && (ff.ArrivalRate != nil || ff.SessionTime != nil):
		return fl, errors.New("give either target_sessions or arrival_rate and session_time, not both")
	case ff.TargetSessions != nil:
		if *ff.TargetSessions < 1 {
			return fl, fmt.Errorf("target_sessions = %d, want >= 1", *ff.TargetSessions)
		}
		fl.target = *ff.TargetSessions
	case ff.ArrivalRate != nil || ff.SessionTime != nil:
		if ff.ArrivalRate == nil || ff.SessionTime == nil {
			return fl, errors.New("arrival_rate and session_time go together (sessions per second, seconds per session)")
		}
		if !(*ff.ArrivalRate >= 0) || !(*ff.SessionTime >= 0) || math.IsInf(*ff.ArrivalRate, 0) || math.IsInf(*ff.SessionTime, 0) {
			return fl, fmt.Errorf("arrival_rate = %g, session_time = %g, want finite numbers >= 0", *ff.ArrivalRate, *ff.SessionTime)
		}
		fl.rate, fl.session = *ff.ArrivalRate, *ff.SessionTime
	}
	if ff.MaxLength < 0 {
		return fl, fmt.Errorf("max_length = %d, want >= 1 (or absent)", ff.MaxLength)
	}
	fl.maxLength = ff.MaxLength
	if len(ff.Clients) == 0 {
		return fl, errors.New("clients is empty, want the client names, e.g. [\"c0\"]")
	}
	index := map[string]int{}
	for c, name := range ff.Clients {
		if name == "" {
			return fl, fmt.Errorf("clients[%d] is empty", c)
		}
		if _, dup := index[name]; dup {
			return fl, fmt.Errorf("clients[%d] = %q appears twice", c, name)
		}
		index[name] = c
	}
	in.Clients = ff.Clients
	if ff.Petals != nil {
		b, r := ff.Petals.CacheBytesPerBlock, ff.Petals.ReservedBytes
		if in.Petals.CacheBytesPerBlock, err = wholeBytes("petals.cache_bytes_per_block", &b, false); err != nil {
			return fl, err
		}
		if in.Petals.ReservedBytes, err = wholeBytes("petals.reserved_bytes", &r, false); err != nil {
			return fl, err
		}
	}
	if len(ff.Servers) == 0 {
		return fl, errors.New("servers is empty")
	}
	names := map[string]bool{}
	for j, fs := range ff.Servers {
		field := fmt.Sprintf("servers[%d]", j)
		if fs.Name == "" {
			return fl, fmt.Errorf("%s.name is missing", field)
		}
		if names[fs.Name] {
			return fl, fmt.Errorf("%s.name = %q appears twice", field, fs.Name)
		}
		names[fs.Name] = true
		field = fmt.Sprintf("servers[%d] (%s)", j, fs.Name)
		s := placement.Server{Name: fs.Name, MaxBlocks: fs.MaxBlocks, ForwardRPS: fs.ForwardRPS, NetworkRPS: fs.NetworkRPS}
		if s.MemoryBytes, err = wholeBytes(field+".memory_bytes", fs.MemoryBytes, true); err != nil {
			return fl, err
		}
		if fs.Tau == nil {
			return fl, fmt.Errorf("%s.tau is missing, want seconds per block per token", field)
		}
		s.Tau = *fs.Tau
		s.RTT = make([]float64, len(ff.Clients))
		for c, name := range ff.Clients {
			v, ok := fs.RTT[name]
			if !ok {
				return fl, fmt.Errorf("%s.rtt has no entry for client %q, want seconds per token for every client", field, name)
			}
			s.RTT[c] = v
		}
		for name := range fs.RTT {
			if _, ok := index[name]; !ok {
				return fl, fmt.Errorf("%s.rtt names client %q, which is not in clients", field, name)
			}
		}
		in.Servers = append(in.Servers, s)
	}
	in.Sessions = 1 // checked with R = 1 here; the real R comes later
	if err := in.Validate(); err != nil {
		return fl, err
	}
	return fl, nil
}

// wholeBytes converts a JSON number of bytes (possibly written 1.32e9) to
// int64, requiring a whole non-negative number (positive if nonzero).
func wholeBytes(field string, v *float64, required bool) (int64, error) {
	if v == nil {
		if required {
			return 0, fmt.Errorf("%s is missing, want a number of bytes", field)
		}
		return 0, nil
	}
	switch {
	case math.IsNaN(*v) || *v < 0 || *v > 1<<53:
		return 0, fmt.Errorf("%s = %g, want bytes in [0, 2^53]", field, *v)
	case *v != math.Trunc(*v):
		return 0, fmt.Errorf("%s = %g is not a whole number of bytes", field, *v)
	case required && *v == 0:
		return 0, fmt.Errorf("%s = 0, want > 0 bytes", field)
	}
	return int64(*v), nil
}

// planJSON is the --json output (schema of issue 4).
type planJSON struct {
	Feasible       bool                 `json:"feasible"`
	TargetSessions int                  `json:"target_sessions"`
	Servers        []spanJSON           `json:"servers"`
	UpperBound     *float64             `json:"upper_bound"`
	LowerBound     *float64             `json:"lower_bound"`
	Routes         map[string]routeJSON `json:"routes"`
}

type spanJSON struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

type routeJSON struct {
	Chain    []spanJSON `json:"chain"`
	PerToken float64    `json:"per_token"`
}

// planResult is everything plan prints.
type planResult struct {
	fl        fleet
	algorithm string
	rSource   string
	plan      placement.Plan
	planErr   error
	upper     *float64
	lower     *float64
	lowerC    []*float64
	routes    []*routing.Route
	routeErr  []error
	maxLength int
}

func runPlan(out io.Writer, o planOptions) error {
	if o.config == "" {
		return fmt.Errorf("%w: --config FLEET.json is required", errUsage)
	}
	algo, err := placement.Lookup(o.algorithm)
	if err != nil {
		return fmt.Errorf("%w: --algorithm: %w", errUsage, err)
	}
	if o.targetSet && o.targetSessions < 1 {
		return fmt.Errorf("%w: --target-sessions %d, want >= 1", errUsage, o.targetSessions)
	}
	if o.maxLengthSet && o.maxLength < 1 {
		return fmt.Errorf("%w: --max-length %d, want >= 1", errUsage, o.maxLength)
	}
	fl, err := loadFleet(o.config)
	if err != nil {
		return err
	}
	res := planResult{fl: fl, algorithm: o.algorithm, maxLength: 128}
	if fl.maxLength > 0 {
		res.maxLength = fl.maxLength
	}
	if o.maxLengthSet {
		res.maxLength = o.maxLength
	}
	in := fl.in
	switch {
	case o.targetSet:
		in.Sessions, res.rSource = o.targetSessions, "--target-sessions"
	case fl.target > 0:
		in.Sessions, res.rSource = fl.target, "target_sessions"
	case fl.rate > 0 || fl.session > 0:
		mean, std := placement.PoissonLoad(fl.rate, fl.session)
		r, err := placement.ChooseR(in, mean, std)
		if err != nil {
			return fmt.Errorf("choosing R from arrival_rate %g/s and session_time %g s: %w", fl.rate, fl.session, err)
		}
		in.Sessions = r
		res.rSource = fmt.Sprintf("mean %.4g + std %.4g of arrivals per session, capped by (19) at %d", mean, std, placement.MaxSessions(in))
	default:
		return fmt.Errorf("%w: %s: no target sessions: set target_sessions (or arrival_rate and session_time) in the file, or pass --target-sessions", errBadFleet, o.config)
	}
	res.fl.in = in
	res.plan, res.planErr = algo(in)
	if res.planErr != nil && !errors.Is(res.planErr, placement.ErrInfeasible) {
		return fmt.Errorf("plan %s: %w", o.algorithm, res.planErr)
	}
	if ub, err := placement.UpperBound(in); err == nil {
		res.upper = &ub
	}
	if lb, err := placement.LowerBound(in); err == nil {
		res.lower = &lb
	}
	res.lowerC = make([]*float64, len(in.Clients))
	for c := range in.Clients {
		if lb, err := placement.ClientLowerBound(in, c); err == nil {
			res.lowerC[c] = &lb
		}
	}
	res.route()
	if o.json {
		return res.writeJSON(out)
	}
	return res.writeText(out)
}

// route routes one session per client on the idle swarm: WS-RR for CG-BP
// and the optimum, PETALS' Dijkstra for the PETALS family.
func (res *planResult) route() {
	in := res.fl.in
	res.routes = make([]*routing.Route, len(in.Clients))
	res.routeErr = make([]error, len(in.Clients))
	if res.plan.Spans == nil {
		return
	}
	for c := range in.Clients {
		var servers []routing.Server
		for j, s := range in.Servers {
			if res.plan.Spans[j].Empty() {
				continue
			}
			servers = append(servers, routing.Server{
				Name: s.Name, Span: res.plan.Spans[j], Tau: s.Tau, RTT: s.RTT[c], CacheSlots: res.plan.CacheSlots[j],
			})
		}
		req := routing.Request{Blocks: in.Model.Blocks, MaxLength: res.maxLength}
		var r routing.Route
		var err error
		switch res.algorithm {
		case "petals", "opt-order", "opt-number":
			r, err = routing.Petals(servers, req, routing.DefaultPetalsParams())
		default:
			r, err = routing.WSRR(servers, req)
		}
		if err != nil {
			res.routeErr[c] = err
			continue
		}
		res.routes[c] = &r
	}
}

func (res *planResult) routerName() string {
	switch res.algorithm {
	case "petals", "opt-order", "opt-number":
		return "PETALS routing"
	}
	return "WS-RR"
}

func (res *planResult) writeJSON(out io.Writer) error {
	in := res.fl.in
	pj := planJSON{
		Feasible:       res.planErr == nil,
		TargetSessions: in.Sessions,
		UpperBound:     res.upper,
		LowerBound:     res.lower,
		Routes:         map[string]routeJSON{},
		Servers:        []spanJSON{},
	}
	for j, s := range in.Servers {
		sp := spanOf(res.plan, j)
		pj.Servers = append(pj.Servers, spanJSON{Name: s.Name, Start: sp.Start, End: sp.End})
	}
	for c, name := range in.Clients {
		r := res.routes[c]
		if r == nil {
			continue
		}
		rj := routeJSON{PerToken: r.PerToken, Chain: []spanJSON{}}
		for _, h := range r.Hops {
			rj.Chain = append(rj.Chain, spanJSON{Name: h.Name, Start: h.Span.Start, End: h.Span.End})
		}
		pj.Routes[name] = rj
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(pj)
}

func (res *planResult) writeText(out io.Writer) error {
	in := res.fl.in
	p := res.plan
	var b strings.Builder
	fmt.Fprintf(&b, "algorithm: %s\n", res.algorithm)
	fmt.Fprintf(&b, "model: L = %d blocks, s_m = %d bytes/block, s_c = %d bytes/block/session\n",
		in.Model.Blocks, in.Model.BlockBytes, in.Model.CacheBytes)
	fmt.Fprintf(&b, "target sessions R = %d (%s)\n\n", in.Sessions, res.rSource)

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSPAN\tBLOCKS\tSESSIONS f_j\tCACHE SLOTS\tT~_j (s/block)")
	for j, s := range in.Servers {
		sp := spanOf(p, j)
		if sp.Empty() {
			fmt.Fprintf(tw, "%s\t-\t0\t-\t-\t-\n", s.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.6g\n", s.Name, sp, sp.Len(), p.Capacity[j], p.CacheSlots[j], p.Amortized[j])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	if res.planErr == nil {
		b.WriteString("feasible: yes (every block is hosted)\n")
	} else {
		fmt.Fprintf(&b, "feasible: no (%v)\n", res.planErr)
	}
	verdict := ">="
	if !placement.Feasible(in) {
		verdict = "<"
	}
	fmt.Fprintf(&b, "condition (18) for R = %d: sum_j min(floor(M_j/(s_m+s_c R)), L) = %d %s L = %d\n",
		in.Sessions, placement.TotalBlocks(in), verdict, in.Model.Blocks)
	fmt.Fprintf(&b, "largest R by (19): %d; largest R satisfying (18): %d\n",
		placement.MaxSessions(in), placement.LargestFeasibleSessions(in))
	if res.upper != nil {
		fmt.Fprintf(&b, "upper bound (17) on CG-BP's average per-token time: %.6g s\n", *res.upper)
	} else {
		b.WriteString("upper bound (17): none (condition 18 fails)\n")
	}
	if res.lower != nil {
		fmt.Fprintf(&b, "lower bound (B.8) on any placement's average per-token time: %.6g s\n", *res.lower)
	} else {
		b.WriteString("lower bound (B.8): none (the servers cannot hold the model even for one session)\n")
	}
	fmt.Fprintf(&b, "\nroutes (%s on an idle swarm, l_max = %d):\n", res.routerName(), res.maxLength)
	for c, name := range in.Clients {
		r := res.routes[c]
		if r == nil {
			if err := res.routeErr[c]; err != nil {
				fmt.Fprintf(&b, "  %s: %v\n", name, err)
			} else {
				fmt.Fprintf(&b, "  %s: no route\n", name)
			}
			continue
		}
		var hops []string
		for _, h := range r.Hops {
			hops = append(hops, fmt.Sprintf("%s[%s]", h.Name, h.Span))
		}
		lb := ""
		if res.lowerC[c] != nil {
			lb = fmt.Sprintf(" (B.8 for this client: %.6g s)", *res.lowerC[c])
		}
		fmt.Fprintf(&b, "  %s: %s  per-token %.6g s%s\n", name, strings.Join(hops, " -> "), r.PerToken, lb)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// spanOf returns the span the plan gives server j (empty when the
// algorithm produced no plan at all).
func spanOf(p placement.Plan, j int) swarm.Span {
	if p.Spans == nil {
		return swarm.Span{}
	}
	return p.Spans[j]
}
