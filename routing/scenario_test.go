package routing_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// runScript runs one script of testdata/ (etcd-raft interaction style):
// each command is followed by its exact expected output. Regenerate with
// `go test ./routing -rewrite` and review the diff by
// hand against the paper before committing.
//
// Commands:
//
//	request blocks=L max-length=N [now=T] [prefill]
//	add-server name=N span=START:END tau=S rtt=S slots=K [as-of=T]
//	           [tau-prefill=S] [rtt-prefill=S] [tau-batch=B/S,B/S...]
//	session server=N remaining=S caches=K   an open session on server N
//	fail name=N                              remove a server
//	graph                                    edges of Lemma 3.1
//	chain NAME...                            check a chain (Lemma 3.1)
//	wait server=N need=K                     t^W of eq. (20)
//	route [algorithm=wsrr|optimized|petals]
func runScript(t *testing.T, file string) {
	datadriven.RunTest(t, filepath.Join("testdata", file), (&harness{}).run)
}

// TestLemma3_1_FeasibleChain: the routing graph and feasible/infeasible
// chains of Lemma 3.1 (eq. 3), full-range servers as single hops.
func TestLemma3_1_FeasibleChain(t *testing.T) { runScript(t, "lemma3_1.txt") }

// TestEq20_WaitingTime: waiting times t^W of eq. (20).
func TestEq20_WaitingTime(t *testing.T) { runScript(t, "eq20.txt") }

// TestWSRR_Scenario: WS-RR, the exact (21) and PETALS routing on one
// fleet as it fills up and servers fail; the all-tokens cost (8).
func TestWSRR_Scenario(t *testing.T) { runScript(t, "wsrr.txt") }

// TestBatchTau_Scenario: a batching server's tau grows with the sessions
// it runs (swarm.BatchFactor), so WS-RR moves new sessions to another
// server once the busy one's batched step costs more.
func TestBatchTau_Scenario(t *testing.T) { runScript(t, "batch.txt") }

// TestEveryScriptRuns guards against a script in testdata/ that no test
// runs.
func TestEveryScriptRuns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, []string{"lemma3_1.txt", "eq20.txt", "wsrr.txt", "batch.txt"}, names)
}

type harness struct {
	servers []routing.Server
	req     routing.Request
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "request":
		h.req = routing.Request{Blocks: intArg(t, d, "blocks"), MaxLength: intArg(t, d, "max-length"), Prefill: d.HasArg("prefill")}
		if d.HasArg("now") {
			h.req.Now = floatArg(t, d, "now")
		}
		return ""
	case "add-server":
		s := routing.Server{Name: strArg(t, d, "name"), Tau: floatArg(t, d, "tau"), RTT: floatArg(t, d, "rtt"), CacheSlots: intArg(t, d, "slots")}
		sp, err := swarm.ParseSpan(strArg(t, d, "span"))
		require.NoError(t, err)
		s.Span = sp
		if d.HasArg("as-of") {
			s.AsOf = floatArg(t, d, "as-of")
		}
		if d.HasArg("tau-prefill") {
			s.TauPrefill = floatArg(t, d, "tau-prefill")
		}
		if d.HasArg("rtt-prefill") {
			s.RTTPrefill = floatArg(t, d, "rtt-prefill")
		}
		if d.HasArg("tau-batch") {
			for _, p := range strings.Split(strArg(t, d, "tau-batch"), ",") {
				b, tau, ok := strings.Cut(p, "/")
				require.True(t, ok, "tau-batch entry %q, want BATCH/SECONDS", p)
				n, err := strconv.Atoi(b)
				require.NoError(t, err)
				v, err := strconv.ParseFloat(tau, 64)
				require.NoError(t, err)
				s.TauBatch = append(s.TauBatch, swarm.BatchTau{Batch: n, Tau: v})
			}
		}
		h.servers = append(h.servers, s)
		return ""
	case "session":
		j := h.index(t, strArg(t, d, "server"))
		h.servers[j].Sessions = append(h.servers[j].Sessions,
			swarm.SessionLoad{Remaining: floatArg(t, d, "remaining"), Caches: intArg(t, d, "caches")})
		return ""
	case "fail":
		j := h.index(t, strArg(t, d, "name"))
		h.servers = append(h.servers[:j], h.servers[j+1:]...)
		return ""
	case "graph":
		return h.graph(t)
	case "chain":
		var chain []int
		for _, a := range d.CmdArgs {
			chain = append(chain, h.index(t, a.Key))
		}
		spans := make([]swarm.Span, len(h.servers))
		for j, s := range h.servers {
			spans[j] = s.Span
		}
		got, err := routing.CheckChain(spans, h.req.Blocks, chain)
		if err != nil {
			return "infeasible: " + err.Error() + "\n"
		}
		var parts []string
		for i, sp := range got {
			parts = append(parts, fmt.Sprintf("%s processes %s", h.servers[chain[i]].Name, sp))
		}
		return "feasible: " + strings.Join(parts, ", ") + "\n"
	case "wait":
		j := h.index(t, strArg(t, d, "server"))
		return fmt.Sprintf("t^W = %s\n", g(routing.WaitTime(h.servers[j], intArg(t, d, "need"), h.req.Now)))
	case "route":
		algo := "wsrr"
		if d.HasArg("algorithm") {
			algo = strArg(t, d, "algorithm")
		}
		var r routing.Route
		var err error
		switch algo {
		case "wsrr":
			r, err = routing.WSRR(h.servers, h.req)
		case "optimized":
			r, err = routing.OptimizedRR(h.servers, h.req)
		case "petals":
			r, err = routing.Petals(h.servers, h.req, routing.DefaultPetalsParams())
		default:
			d.Fatalf(t, "unknown algorithm %q", algo)
		}
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		var b strings.Builder
		for _, hp := range r.Hops {
			fmt.Fprintf(&b, "%s %s per-token=%s wait=%s\n", hp.Name, hp.Span, g(hp.PerToken), g(hp.Wait))
		}
		fmt.Fprintf(&b, "per-token=%s wait=%s cost=%s\n", g(r.PerToken), g(r.Wait), g(r.Cost))
		return b.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (h *harness) graph(t *testing.T) string {
	spans := make([]swarm.Span, len(h.servers))
	for j, s := range h.servers {
		spans[j] = s.Span
	}
	gr, err := routing.NewGraph(spans, h.req.Blocks)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	name := func(i int) string {
		switch i {
		case gr.Source():
			return "S"
		case gr.Sink():
			return "D"
		}
		return h.servers[i].Name
	}
	var b strings.Builder
	for _, i := range append([]int{gr.Source()}, seq(len(h.servers))...) {
		for _, e := range gr.Out[i] {
			if e.To == gr.Sink() {
				fmt.Fprintf(&b, "%s -> D\n", name(i))
				continue
			}
			fmt.Fprintf(&b, "%s -> %s processes %s\n", name(i), name(e.To), e.Blocks)
		}
	}
	require.Len(t, gr.Out, len(h.servers)+2)
	return b.String()
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func (h *harness) index(t *testing.T, name string) int {
	for j, s := range h.servers {
		if s.Name == name {
			return j
		}
	}
	t.Fatalf("no server %q", name)
	return -1
}

func g(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func strArg(t *testing.T, d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			require.Len(t, a.Vals, 1, "%s: %s takes one value", d.Pos, key)
			return a.Vals[0]
		}
	}
	t.Fatalf("%s: missing argument %s", d.Pos, key)
	return ""
}

func intArg(t *testing.T, d *datadriven.TestData, key string) int {
	n, err := strconv.Atoi(strArg(t, d, key))
	require.NoError(t, err, "%s: %s", d.Pos, key)
	return n
}

func floatArg(t *testing.T, d *datadriven.TestData, key string) float64 {
	f, err := strconv.ParseFloat(strArg(t, d, key), 64)
	require.NoError(t, err, "%s: %s", d.Pos, key)
	return f
}
