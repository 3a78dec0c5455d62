package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/swarmllm/swarm/placement"
)

// Summary is the JSON form of a Plan (`swarm plan --json`).
type Summary struct {
	// Feasible is true when every block is hosted.
	Feasible bool `json:"feasible"`
	// TargetSessions is R.
	TargetSessions int `json:"target_sessions"`
	// Servers are the spans, one per server in file order (0:0 when empty).
	Servers []NamedSpan `json:"servers"`
	// UpperBound (17) and LowerBound (B.8) are in seconds per token; null
	// when they do not exist.
	UpperBound *float64 `json:"upper_bound"`
	LowerBound *float64 `json:"lower_bound"`
	// SessionBound is the exact single-session lower bound, in seconds per
	// token (placement.SessionBound); null when no chain holds one session.
	SessionBound *float64 `json:"session_bound"`
	// Routes are the idle-swarm routes by client name; clients without a
	// route are absent.
	Routes map[string]RouteSummary `json:"routes"`
}

// NamedSpan is a server and its blocks, 0-based and half-open.
type NamedSpan struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// RouteSummary is one route: the blocks each hop processes and the
// per-token time of eq. (4), in seconds.
type RouteSummary struct {
	Chain    []NamedSpan `json:"chain"`
	PerToken float64     `json:"per_token"`
}

// Summary returns the JSON form of the plan.
func (p *Plan) Summary() Summary {
	s := Summary{
		Feasible:       p.Infeasible == nil,
		TargetSessions: p.Input.Sessions,
		UpperBound:     p.UpperBound,
		LowerBound:     p.LowerBound,
		SessionBound:   p.SessionBound,
		Routes:         map[string]RouteSummary{},
		Servers:        []NamedSpan{},
	}
	for j, srv := range p.Input.Servers {
		sp := p.Span(j)
		s.Servers = append(s.Servers, NamedSpan{Name: srv.Name, Start: sp.Start, End: sp.End})
	}
	for c, name := range p.Input.Clients {
		r := p.Routes[c]
		if r == nil {
			continue
		}
		rs := RouteSummary{PerToken: r.PerToken, Chain: []NamedSpan{}}
		for _, h := range r.Hops {
			rs.Chain = append(rs.Chain, NamedSpan{Name: h.Name, Start: h.Span.Start, End: h.Span.End})
		}
		s.Routes[name] = rs
	}
	return s
}

// WriteJSON writes the Summary, indented.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p.Summary())
}

// routerNames names the routing rules in reports.
var routerNames = map[string]string{"wsrr": "WS-RR", "petals": "PETALS routing", "opt-rr": "optimized routing (21)"}

// WriteText writes the plan for people: the spans with f_j, cache slots
// and t~_j, the feasibility verdict (18), the largest R by (19) and (18),
// the bounds (17) and (B.8), and each client's route with its per-token
// time and its own (B.8).
func (p *Plan) WriteText(w io.Writer) error {
	in, pl := p.Input, p.Placement
	var b strings.Builder
	fmt.Fprintf(&b, "algorithm: %s\n", p.Algorithm.Placement)
	fmt.Fprintf(&b, "model: L = %d blocks, s_m = %d bytes/block, s_c = %d bytes/block/session\n",
		in.Model.Blocks, in.Model.BlockBytes, in.Model.CacheBytes)
	fmt.Fprintf(&b, "target sessions R = %d (%s)\n\n", in.Sessions, p.Source)

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSPAN\tBLOCKS\tSESSIONS f_j\tCACHE SLOTS\tT~_j (s/block)")
	for j, s := range in.Servers {
		sp := p.Span(j)
		if sp.Empty() {
			fmt.Fprintf(tw, "%s\t-\t0\t-\t-\t-\n", s.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.6g\n", s.Name, sp, sp.Len(), pl.Capacity[j], pl.CacheSlots[j], pl.Amortized[j])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	if p.Infeasible == nil {
		b.WriteString("feasible: yes (every block is hosted)\n")
	} else {
		fmt.Fprintf(&b, "feasible: no (%v)\n", p.Infeasible)
	}
	verdict := ">="
	if !placement.Feasible(in) {
		verdict = "<"
	}
	fmt.Fprintf(&b, "condition (18) for R = %d: sum_j min(floor(M_j/(s_m+s_c R)), L) = %d %s L = %d\n",
		in.Sessions, placement.TotalBlocks(in), verdict, in.Model.Blocks)
	fmt.Fprintf(&b, "largest R by (19): %d; largest R satisfying (18): %d\n",
		placement.MaxSessions(in), placement.LargestFeasibleSessions(in))
	if p.UpperBound != nil {
		fmt.Fprintf(&b, "upper bound (17) on CG-BP's average per-token time: %.6g s\n", *p.UpperBound)
	} else {
		b.WriteString("upper bound (17): none (condition 18 fails)\n")
	}
	if p.LowerBound != nil {
		fmt.Fprintf(&b, "lower bound (B.8) on any placement's average per-token time: %.6g s\n", *p.LowerBound)
	} else {
		b.WriteString("lower bound (B.8): none (the servers cannot hold the model even for one session)\n")
	}
	if p.SessionBound != nil {
		fmt.Fprintf(&b, "exact single-session lower bound (full RTT per hop) on any placement's average per-token time: %.6g s\n", *p.SessionBound)
	}
	fmt.Fprintf(&b, "\nroutes (%s on an idle swarm, l_max = %d):\n", routerNames[p.Algorithm.Routing], p.MaxLength)
	for c, name := range in.Clients {
		p.writeRoute(&b, c, name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRoute writes client c's route line.
func (p *Plan) writeRoute(b *strings.Builder, c int, name string) {
	r := p.Routes[c]
	if r == nil {
		if err := p.RouteErrs[c]; err != nil {
			fmt.Fprintf(b, "  %s: %v\n", name, err)
		} else {
			fmt.Fprintf(b, "  %s: no route\n", name)
		}
		return
	}
	var hops []string
	for _, h := range r.Hops {
		hops = append(hops, fmt.Sprintf("%s[%s]", h.Name, h.Span))
	}
	lb := ""
	if p.ClientLowerBound[c] != nil {
		lb = fmt.Sprintf(" (B.8 for this client: %.6g s)", *p.ClientLowerBound[c])
	}
	fmt.Fprintf(b, "  %s: %s  per-token %.6g s%s\n", name, strings.Join(hops, " -> "), r.PerToken, lb)
}
