package experiment

import (
	"fmt"
	"math"
	"strings"

	"github.com/swarmllm/swarm/sim"
)

// Preset is one deployment of paper 003's evaluation (Sec. 4.1, Tables 4
// and 5, Figs. 6-9): the values of the options it fixes.
type Preset struct {
	// Name is the --preset value.
	Name string
	// Doc says where the values come from.
	Doc string
	// Scenario is "clustered" or "topology".
	Scenario string
	// Topologies are the topology names (Topology.Name, any case) the
	// paper ran it on; empty for the clustered scenario.
	Topologies []string
	// Servers and A100 are C and the A100s among them (topology presets
	// of Table 5); Servers 0 is 40% of the nodes (Figs. 7-9), A100 -1 is
	// eta = Eta.
	Servers, A100 int
	// Eta is the A100 fraction when A100 is -1.
	Eta float64
	// Rate, Requests, InputTokens and OutputTokens are the workload; Rate
	// and OutputTokens 0 leave the option as given (a table column).
	Rate                                float64
	Requests, InputTokens, OutputTokens int
	// Vary is the swept option of a figure preset ("" for a table).
	Vary string
}

// presets are the paper's deployments, in the order of the paper.
var presets = []Preset{
	{Name: "table4-clustered", Doc: "Table 4 / C.7 / C.8: clustered, 2 A100s + 7 MIGs (Table 2), lI = 20, 100 requests; pick the column with --client-cluster, --rate 0.1|0.5, --output-tokens 64|128",
		Scenario: "clustered", Requests: 100, InputTokens: 20},
	{Name: "table5-abovenet-9", Doc: "Table 5 / C.9 / C.10 AboveNet row: --topology Abvt, 9 servers of which 2 A100s, lI = 20, 100 requests",
		Scenario: "topology", Topologies: []string{"Abvt"}, Servers: 9, A100: 2, Requests: 100, InputTokens: 20},
	{Name: "table5-26", Doc: "Table 5 / C.9 / C.10 BellCanada and GTS-CE rows: --topology Bellcanada or GtsCe, 26 servers of which 5 A100s, lI = 20, 100 requests (the authors' test_general_case_online_large.m)",
		Scenario: "topology", Topologies: []string{"Bellcanada", "GtsCe"}, Servers: 26, A100: 5, Requests: 100, InputTokens: 20},
	{Name: "fig6", Doc: "Fig. 6 (sweep servers C): eta 0.2, rate 0.5, 100 requests, lI 20, l_max 128",
		Scenario: "topology", Topologies: []string{"Abvt", "Bellcanada", "GtsCe"}, A100: -1, Eta: 0.2, Rate: 0.5, Requests: 100, InputTokens: 20, OutputTokens: 128, Vary: "servers"},
	{Name: "fig7", Doc: "Fig. 7 (sweep eta): C = 0.4 nodes, rate 0.5, 100 requests, lI 20, l_max 128",
		Scenario: "topology", Topologies: []string{"Abvt", "Bellcanada", "GtsCe"}, A100: -1, Eta: 0.2, Rate: 0.5, Requests: 100, InputTokens: 20, OutputTokens: 128, Vary: "eta"},
	{Name: "fig8", Doc: "Fig. 8 (sweep rate): C = 0.4 nodes, eta 0.2, N_R = 200 rate, lI 20, l_max 128",
		Scenario: "topology", Topologies: []string{"Abvt", "Bellcanada", "GtsCe"}, A100: -1, Eta: 0.2, Requests: 100, InputTokens: 20, OutputTokens: 128, Vary: "rate"},
	{Name: "fig9", Doc: "Fig. 9 (sweep l_max): C = 0.4 nodes, eta 0.2, rate 0.5, 100 requests, lI 20",
		Scenario: "topology", Topologies: []string{"Abvt", "Bellcanada", "GtsCe"}, A100: -1, Eta: 0.2, Rate: 0.5, Requests: 100, InputTokens: 20, Vary: "output-tokens"},
}

// Presets returns the paper's deployments.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// LookupPreset returns the preset called name; errors are *OptionError.
func LookupPreset(name string) (*Preset, error) {
	var names []string
	for i := range presets {
		if presets[i].Name == name {
			p := presets[i]
			return &p, nil
		}
		names = append(names, presets[i].Name)
	}
	return nil, badOption("--preset %q, want one of %s", name, strings.Join(names, ", "))
}

func presetHelp() string {
	var parts []string
	for _, p := range presets {
		parts = append(parts, p.Name+" ("+p.Doc+")")
	}
	return strings.Join(parts, "; ")
}

// ApplyPreset fills o from the preset o.Preset: every option the preset
// fixes and the caller did not give explicitly (given reports, by `swarm
// sim` flag name, the options the user set; nil: none). A topology preset
// needs Topology. The result still goes through New, which warns when an
// explicit option made the fleet differ from the paper's. Errors are
// *OptionError.
func ApplyPreset(o Options, given func(flag string) bool) (Options, error) {
	if o.Preset == "" {
		return o, nil
	}
	p, err := LookupPreset(o.Preset)
	if err != nil {
		return o, err
	}
	if given == nil {
		given = func(string) bool { return false }
	}
	set := func(flag string, apply func()) {
		if !given(flag) {
			apply()
		}
	}
	set("scenario", func() { o.Scenario = p.Scenario })
	if p.Scenario == "topology" && o.Topology == "" {
		return o, badOption("--preset %s needs --topology, one of %s (.graph in ../shared/topologies/repetita/2016TopologyZooUCL_unary/)",
			p.Name, strings.Join(p.Topologies, ", "))
	}
	if p.Scenario == "topology" {
		set("servers", func() { o.Servers = p.Servers })
		set("eta", func() {
			if p.A100 >= 0 && p.Servers > 0 {
				o.Eta = float64(p.A100) / float64(p.Servers)
			} else {
				o.Eta = p.Eta
			}
		})
	}
	set("requests", func() { o.Requests = p.Requests })
	set("input-tokens", func() { o.InputTokens = p.InputTokens })
	if p.Rate > 0 {
		set("rate", func() { o.Rate = p.Rate })
	}
	if p.OutputTokens > 0 {
		set("output-tokens", func() { o.OutputTokens = p.OutputTokens })
	}
	return o, nil
}

// Warnings returns why this experiment's numbers must not be compared
// with the paper's tables: a fleet that differs from the preset's, or,
// without a preset, a Table 5 topology run with another deployment than
// the paper's. Empty when comparable (or nothing to compare with).
func (e *Experiment) Warnings() []string { return append([]string(nil), e.warnings...) }

// fleetMatches reports whether the experiment's fleet is the paper's
// deployment of Table 4 or 5 (clustered; or the paper's server and A100
// counts on a Table 5 topology), and if not, why.
func (e *Experiment) fleetMatches() (bool, string) {
	if e.top == nil {
		return true, ""
	}
	n, a100, ok := sim.PaperDeployment(e.top.Name)
	if !ok {
		return false, fmt.Sprintf("topology %s is not one of Table 5's (Abvt, Bellcanada, GtsCe)", e.top.Name)
	}
	got := int(math.Round(e.o.Eta * float64(e.o.Servers)))
	if e.o.Servers != n || got != a100 {
		return false, fmt.Sprintf("Table 5 ran %s with %d servers (%d A100s); this fleet has %d servers (%d A100s)",
			e.top.Name, n, a100, e.o.Servers, got)
	}
	return true, ""
}

// checkPaperMatch computes Warnings.
func (e *Experiment) checkPaperMatch() []string {
	var out []string
	if e.o.FleetData != nil || e.o.ModelData != nil {
		if e.preset != nil {
			return []string{"--fleet or --model replaces the paper's deployment of --preset " + e.preset.Name + ": the paper's numbers are not shown"}
		}
		return nil
	}
	if p := e.preset; p != nil {
		if e.o.Scenario != p.Scenario {
			return []string{fmt.Sprintf("--preset %s is the %s scenario, this run is %s: the paper's numbers are not shown", p.Name, p.Scenario, e.o.Scenario)}
		}
		if e.top != nil && !slicesContainsFold(p.Topologies, e.top.Name) {
			out = append(out, fmt.Sprintf("--preset %s ran on %s, not %s", p.Name, strings.Join(p.Topologies, ", "), e.top.Name))
		}
		if p.Vary == "" {
			if ok, why := e.fleetMatches(); !ok {
				out = append(out, "the fleet does not match --preset "+p.Name+": "+why)
			}
		} else if e.top != nil {
			want := max(1, int(math.Round(0.4*float64(len(e.top.Nodes)))))
			if p.Vary != "servers" && e.o.Servers != want {
				out = append(out, fmt.Sprintf("--preset %s uses C = 0.4 x %d nodes = %d servers; this run has %d", p.Name, len(e.top.Nodes), want, e.o.Servers))
			}
			if p.Vary != "eta" && e.o.Eta != p.Eta {
				out = append(out, fmt.Sprintf("--preset %s uses eta %.2f; this run has %.2f", p.Name, p.Eta, e.o.Eta))
			}
		}
		if e.o.InputTokens != p.InputTokens || (p.Vary != "rate" && e.o.Requests != p.Requests) {
			out = append(out, fmt.Sprintf("--preset %s uses lI = %d and %d requests; this run has %d and %d",
				p.Name, p.InputTokens, p.Requests, e.o.InputTokens, e.o.Requests))
		}
		if len(out) > 0 {
			out = append(out, "the paper's numbers are not shown: compare only runs of the paper's deployment")
		}
		return out
	}
	if e.top != nil {
		if _, _, ok := sim.PaperDeployment(e.top.Name); ok {
			if ok, why := e.fleetMatches(); !ok {
				out = append(out, why+": do not compare with Table 5 (use --preset table5-26 or table5-abovenet-9)")
			}
		}
	}
	return out
}

func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
