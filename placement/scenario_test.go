package placement_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// runScript runs one script of testdata/ (etcd-raft interaction style):
// each command is followed by its exact expected output. Regenerate with
// `go test ./placement -rewrite` and review the diff by
// hand against the paper before committing.
//
// Commands:
//
//	model blocks=L block-bytes=S_M cache-bytes=S_C
//	clients NAME...
//	add-server name=N memory=BYTES tau=SECONDS rtt=(SECONDS,...) [max-blocks=K]
//	           [forward-rps=X] [network-rps=X]
//	fail name=N                    remove a server from the fleet
//	petals cache-bytes=B reserved=BYTES
//	order NAME...                  arrival order for the PETALS baselines
//	plan algorithm=A sessions=R    run a placement algorithm, print spans
//	route                          WS-RR route per client on the last plan
//	routed [demand=(N,...)]        optimal routing (16) on the last plan
//	optimal sessions=R [demand=(N,...)]
//	bounds sessions=R [demand=(N,...)]
//	session-bound sessions=R [demand=(N,...)]  exact single-session bound
//	incremental sessions=R joiner=N fixed=(NAME=START:END,...)
//	choose-r mean=X std=Y
//	replan sessions=R [min-gain=X] [hold=K] [current=(NAME=START:END,...)] [dead=(NAME,...)]
//	                               Replan; without current, the last plan's spans
//	self-replan sessions=R me=NAME [intents=(NAME=START:END,...)] [same as replan]
//	migrate sessions=R [hold=K] [single] current=(NAME=START:END,...) target=(NAME=START:END,...)
func runScript(t *testing.T, file string) {
	datadriven.RunTest(t, filepath.Join("testdata", file), (&harness{}).run)
}

// TestLemma3_3_ContiguousPlacement: CG-BP lays the fastest servers end to
// end (Lemma 3.3), then fills by least capacity (Alg. 1 line 7); bounds
// (17), (19), (B.8) on the same fleet.
func TestLemma3_3_ContiguousPlacement(t *testing.T) { runScript(t, "lemma3_3.txt") }

// TestFig5_Suboptimality: the L^2-server example of Fig. 5, L = 2 and 3,
// CG-BP against the exhaustive optimum.
func TestFig5_Suboptimality(t *testing.T) { runScript(t, "fig5.txt") }

// TestEq18_Boundary: condition (18) feasible at equality and infeasible one
// byte below; (19) at its boundary.
func TestEq18_Boundary(t *testing.T) { runScript(t, "eq18.txt") }

// TestPetalsBaselines: PETALS placement, "Optimized Order", "Optimized
// Number" (Sec. 4.3) next to CG-BP.
func TestPetalsBaselines(t *testing.T) { runScript(t, "petals.txt") }

// TestIncrementalCGBP: one server joining fixed spans; ChooseR.
func TestIncrementalCGBP(t *testing.T) { runScript(t, "incremental.txt") }

// TestReplan: live replanning (issue 15): holes after deaths, a poor
// join order, no-op at the target, memory too tight to hold both spans,
// a gain below the threshold, and the per-server decision.
func TestReplan(t *testing.T) { runScript(t, "replan.txt") }

// TestRefined: the exact single-session bound against (B.8) by hand, and
// Refined on Fig. 5 (where it must find the optimum) and on a fleet where
// CG-BP is optimal (where it must keep CG-BP's plan).
func TestRefined(t *testing.T) { runScript(t, "refined.txt") }

// TestMigrate: make-before-break schedules between given spans.
func TestMigrate(t *testing.T) { runScript(t, "migrate.txt") }

// TestEveryScriptRuns guards against a script in testdata/ that no test
// runs.
func TestEveryScriptRuns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, []string{"lemma3_3.txt", "fig5.txt", "eq18.txt", "petals.txt", "incremental.txt", "replan.txt", "migrate.txt", "refined.txt"}, names)
}

type harness struct {
	in   placement.Input
	plan placement.Plan
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "model":
		d.ScanArgs(t, "blocks", &h.in.Model.Blocks)
		h.in.Model.BlockBytes = int64(intArg(t, d, "block-bytes"))
		h.in.Model.CacheBytes = int64(intArg(t, d, "cache-bytes"))
		return ""
	case "clients":
		h.in.Clients = nil
		for _, a := range d.CmdArgs {
			h.in.Clients = append(h.in.Clients, a.Key)
		}
		return ""
	case "add-server":
		var s placement.Server
		d.ScanArgs(t, "name", &s.Name)
		s.MemoryBytes = int64(intArg(t, d, "memory"))
		s.Tau = floatArg(t, d, "tau")
		s.RTT = floatsArg(t, d, "rtt")
		if d.HasArg("max-blocks") {
			d.ScanArgs(t, "max-blocks", &s.MaxBlocks)
		}
		if d.HasArg("forward-rps") {
			s.ForwardRPS = floatArg(t, d, "forward-rps")
		}
		if d.HasArg("network-rps") {
			s.NetworkRPS = floatArg(t, d, "network-rps")
		}
		h.in.Servers = append(h.in.Servers, s)
		return ""
	case "fail":
		var name string
		d.ScanArgs(t, "name", &name)
		j := h.index(t, name)
		h.in.Servers = append(h.in.Servers[:j], h.in.Servers[j+1:]...)
		h.in.Order = nil
		return ""
	case "petals":
		h.in.Petals.CacheBytesPerBlock = int64(intArg(t, d, "cache-bytes"))
		h.in.Petals.ReservedBytes = int64(intArg(t, d, "reserved"))
		return ""
	case "order":
		h.in.Order = nil
		for _, a := range d.CmdArgs {
			h.in.Order = append(h.in.Order, h.index(t, a.Key))
		}
		return ""
	case "plan":
		var name string
		d.ScanArgs(t, "algorithm", &name)
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		h.in.Demand = nil
		f, err := placement.Lookup(name)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		plan, err := f(h.in)
		h.plan = plan
		return h.printPlan(plan, err)
	case "route":
		return h.route(t)
	case "routed":
		h.demand(t, d)
		v, err := placement.RoutedPerToken(h.in, h.plan.Spans)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("optimal routing (16): average per-token %s s\n", g(v))
	case "optimal":
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		h.demand(t, d)
		plan, v, err := placement.OptimalPerToken(h.in)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.plan = plan
		return h.printPlan(plan, nil) + fmt.Sprintf("optimum of (6): average per-token %s s\n", g(v))
	case "bounds":
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		h.demand(t, d)
		return h.bounds()
	case "session-bound":
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		h.demand(t, d)
		var b strings.Builder
		for c, name := range h.in.Clients {
			v, err := placement.ClientSessionBound(h.in, c)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			fmt.Fprintf(&b, "single-session %s: lower bound %s s\n", name, g(v))
		}
		v, err := placement.SessionBound(h.in)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		fmt.Fprintf(&b, "single-session mean over sessions: %s s\n", g(v))
		return b.String()
	case "incremental":
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		var joiner string
		d.ScanArgs(t, "joiner", &joiner)
		fixed := make([]swarm.Span, len(h.in.Servers))
		for _, v := range argVals(t, d, "fixed") {
			name, spec, ok := strings.Cut(v, "=")
			require.True(t, ok, "fixed entry %q: want NAME=START:END", v)
			sp, err := swarm.ParseSpan(spec)
			require.NoError(t, err)
			fixed[h.index(t, name)] = sp
		}
		sp, err := placement.Incremental(h.in, fixed, h.index(t, joiner))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("%s joins with %s (m=%d)\n", joiner, sp, sp.Len())
	case "replan", "self-replan":
		return h.replan(t, d)
	case "migrate":
		d.ScanArgs(t, "sessions", &h.in.Sessions)
		var opt placement.ReplanOptions
		if d.HasArg("hold") {
			d.ScanArgs(t, "hold", &opt.HoldSessions)
		}
		opt.SingleMove = d.HasArg("single")
		cur, target := h.spans(t, d, "current"), h.spans(t, d, "target")
		steps, blocked, final, err := placement.Migrate(h.in, cur, target, opt)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return h.printSteps(steps, blocked, final)
	case "choose-r":
		mean, std := floatArg(t, d, "mean"), floatArg(t, d, "std")
		r, err := placement.ChooseR(h.in, mean, std)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("R = %d (19: %d, largest feasible by 18: %d)\n", r,
			placement.MaxSessions(h.in), placement.LargestFeasibleSessions(h.in))
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (h *harness) index(t *testing.T, name string) int {
	for j, s := range h.in.Servers {
		if s.Name == name {
			return j
		}
	}
	t.Fatalf("no server %q", name)
	return -1
}

func (h *harness) demand(t *testing.T, d *datadriven.TestData) {
	h.in.Demand = nil
	if d.HasArg("demand") {
		for _, v := range argVals(t, d, "demand") {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			h.in.Demand = append(h.in.Demand, n)
		}
	}
}

func (h *harness) printPlan(p placement.Plan, err error) string {
	var b strings.Builder
	if p.Spans != nil {
		for j, s := range h.in.Servers {
			sp := p.Spans[j]
			if sp.Empty() {
				fmt.Fprintf(&b, "%-4s -\n", s.Name)
				continue
			}
			fmt.Fprintf(&b, "%-4s %-6s m=%d f=%d slots=%d t~=%s\n", s.Name, sp, sp.Len(), p.Capacity[j], p.CacheSlots[j], g(p.Amortized[j]))
		}
		var names []string
		for _, j := range p.Order {
			names = append(names, h.in.Servers[j].Name)
		}
		fmt.Fprintf(&b, "order: %s\n", strings.Join(names, " "))
	}
	if err != nil {
		var ie *placement.InfeasibleError
		fmt.Fprintf(&b, "error: %v (infeasible: %v)\n", err, errors.As(err, &ie))
	}
	return b.String()
}

// route runs WS-RR (no open sessions) for every client on the last plan.
func (h *harness) route(t *testing.T) string {
	var b strings.Builder
	for c, name := range h.in.Clients {
		var servers []routing.Server
		var index []int
		for j, s := range h.in.Servers {
			if h.plan.Spans[j].Empty() {
				continue
			}
			servers = append(servers, routing.Server{
				Name: s.Name, Span: h.plan.Spans[j], Tau: s.Tau, RTT: s.RTT[c], CacheSlots: h.plan.CacheSlots[j],
			})
			index = append(index, j)
		}
		r, err := routing.WSRR(servers, routing.Request{Blocks: h.in.Model.Blocks, MaxLength: 1})
		if err != nil {
			fmt.Fprintf(&b, "%s: error: %v\n", name, err)
			continue
		}
		var hops []string
		for _, hp := range r.Hops {
			hops = append(hops, fmt.Sprintf("%s[%s]", hp.Name, hp.Span))
		}
		fmt.Fprintf(&b, "%s: %s per-token=%s\n", name, strings.Join(hops, " -> "), g(r.PerToken))
	}
	require.NotEmpty(t, h.in.Clients)
	return b.String()
}

func (h *harness) bounds() string {
	var b strings.Builder
	fmt.Fprintf(&b, "(18): sum m_j = %d, L = %d, feasible = %v\n", placement.TotalBlocks(h.in), h.in.Model.Blocks, placement.Feasible(h.in))
	fmt.Fprintf(&b, "(19): R <= %d; largest R satisfying (18): %d\n", placement.MaxSessions(h.in), placement.LargestFeasibleSessions(h.in))
	if ub, err := placement.UpperBound(h.in); err != nil {
		fmt.Fprintf(&b, "(17): error: %v\n", err)
	} else {
		fmt.Fprintf(&b, "(17): upper bound %s s\n", g(ub))
	}
	for c, name := range h.in.Clients {
		if lb, err := placement.ClientLowerBound(h.in, c); err != nil {
			fmt.Fprintf(&b, "(B.8) %s: error: %v\n", name, err)
		} else {
			fmt.Fprintf(&b, "(B.8) %s: lower bound %s s\n", name, g(lb))
		}
	}
	if lb, err := placement.LowerBound(h.in); err == nil {
		fmt.Fprintf(&b, "(B.8) mean over sessions: %s s\n", g(lb))
	}
	return b.String()
}

func g(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func argVals(t *testing.T, d *datadriven.TestData, key string) []string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return a.Vals
		}
	}
	t.Fatalf("%s: missing argument %s", d.Pos, key)
	return nil
}

func intArg(t *testing.T, d *datadriven.TestData, key string) int {
	v := argVals(t, d, key)
	require.Len(t, v, 1, "%s: %s takes one value", d.Pos, key)
	n, err := strconv.ParseInt(v[0], 10, 64)
	require.NoError(t, err, "%s: %s", d.Pos, key)
	return int(n)
}

func floatsArg(t *testing.T, d *datadriven.TestData, key string) []float64 {
	var out []float64
	for _, v := range argVals(t, d, key) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		require.NoError(t, err, "%s: %s", d.Pos, key)
		out = append(out, f)
	}
	return out
}

func floatArg(t *testing.T, d *datadriven.TestData, key string) float64 {
	v := floatsArg(t, d, key)
	require.Len(t, v, 1, "%s: %s takes one value", d.Pos, key)
	return v[0]
}

// spans reads NAME=START:END entries of argument key into per-server spans.
func (h *harness) spans(t *testing.T, d *datadriven.TestData, key string) []swarm.Span {
	out := make([]swarm.Span, len(h.in.Servers))
	for _, v := range argVals(t, d, key) {
		name, spec, ok := strings.Cut(v, "=")
		require.True(t, ok, "%s entry %q: want NAME=START:END", key, v)
		sp, err := swarm.ParseSpan(spec)
		require.NoError(t, err)
		out[h.index(t, name)] = sp
	}
	return out
}

func (h *harness) replan(t *testing.T, d *datadriven.TestData) string {
	d.ScanArgs(t, "sessions", &h.in.Sessions)
	h.in.Demand = nil
	var opt placement.ReplanOptions
	if d.HasArg("min-gain") {
		opt.MinGain = floatArg(t, d, "min-gain")
	}
	if d.HasArg("hold") {
		d.ScanArgs(t, "hold", &opt.HoldSessions)
	}
	cur := h.plan.Spans
	if d.HasArg("current") {
		cur = h.spans(t, d, "current")
	}
	alive := make([]bool, len(h.in.Servers))
	for j := range alive {
		alive[j] = true
	}
	if d.HasArg("dead") {
		for _, name := range argVals(t, d, "dead") {
			alive[h.index(t, name)] = false
		}
	}
	var b strings.Builder
	var r placement.Replanning
	if d.Cmd == "self-replan" {
		var me string
		d.ScanArgs(t, "me", &me)
		var intents []placement.Intent
		if d.HasArg("intents") {
			for j, sp := range h.spans(t, d, "intents") {
				if !sp.Empty() {
					intents = append(intents, placement.Intent{Server: j, Blocks: sp})
				}
			}
		}
		s, err := placement.SelfReplan(h.in, cur, alive, opt, h.index(t, me), intents)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		if s.Has {
			fmt.Fprintf(&b, "%s: move %s -> %s (%s) in step %d; now=%v: %s\n", me, s.Move.From, s.Move.To, s.Move.Kind, s.Step+1, s.Now, s.Why)
		} else {
			fmt.Fprintf(&b, "%s: no move; now=%v: %s\n", me, s.Now, s.Why)
		}
		return b.String()
	}
	r, err := placement.Replan(h.in, cur, alive, opt)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	fmt.Fprintf(&b, "reason: %s, apply: %v\n", r.Reason, r.Apply)
	fmt.Fprintf(&b, "uncovered: %v, below capacity: %v\n", r.Uncovered, r.BelowCapacity)
	fmt.Fprintf(&b, "idle per-token: current %s s, final %s s, gain %s\n", g(r.CurrentPerToken), g(r.FinalPerToken), g(r.Gain))
	for j, s := range h.in.Servers {
		state := ""
		switch {
		case !alive[j]:
			state = " (dead)"
		case cur[j] == r.Target.Spans[j]:
			state = " (stays)"
		}
		fmt.Fprintf(&b, "target %-4s %s%s\n", s.Name, spanText(r.Target.Spans[j]), state)
	}
	b.WriteString(h.printSteps(r.Steps, r.Blocked, r.Final))
	return b.String()
}

func spanText(s swarm.Span) string {
	if s.Empty() {
		return "-"
	}
	return s.String()
}

func (h *harness) printSteps(steps []placement.Step, blocked []placement.Move, final []swarm.Span) string {
	var b strings.Builder
	var total int64
	for k, st := range steps {
		var moves []string
		for _, m := range st.Moves {
			moves = append(moves, fmt.Sprintf("%s %s -> %s %s", h.in.Servers[m.Server].Name, spanText(m.From), spanText(m.To), m.Kind))
		}
		fmt.Fprintf(&b, "step %d (load %d bytes): %s\n", k+1, st.LoadBytes, strings.Join(moves, "; "))
		total += st.LoadBytes
	}
	for _, m := range blocked {
		fmt.Fprintf(&b, "blocked: %s %s -> %s %s\n", h.in.Servers[m.Server].Name, spanText(m.From), spanText(m.To), m.Kind)
	}
	var fin []string
	for j, s := range h.in.Servers {
		fin = append(fin, s.Name+"="+spanText(final[j]))
	}
	fmt.Fprintf(&b, "final: %s; total load %d bytes\n", strings.Join(fin, " "), total)
	return b.String()
}
