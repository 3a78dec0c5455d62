package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/topologies"
)

// SchemaVersion names the layout of the JSON documents of `swarm sim`
// and `swarm sim sweep` (Report, SweepReport, TablesReport). It changes
// whenever a field changes meaning or goes away; new fields may be added
// within a version.
const SchemaVersion = "swarm-sim/2"

// Config echoes the options of an experiment as fields (resolved: Servers
// after the 40% default, the preset's values filled in).
type Config struct {
	Preset              string   `json:"preset,omitempty"`
	Scenario            string   `json:"scenario"`
	Fleet               string   `json:"fleet,omitempty"`
	ModelFile           string   `json:"model_file,omitempty"`
	Topology            string   `json:"topology,omitempty"`
	TopologyName        string   `json:"topology_name,omitempty"`
	GraphMLDelays       string   `json:"graphml_delays,omitempty"`
	Servers             int      `json:"servers,omitempty"`
	Eta                 float64  `json:"eta,omitempty"`
	ClientCluster       int      `json:"client_cluster"`
	Model               string   `json:"model"`
	Rate                float64  `json:"rate"`
	Requests            int      `json:"requests"`
	InputTokens         int      `json:"input_tokens"`
	OutputTokens        int      `json:"output_tokens"`
	Seed                uint64   `json:"seed"`
	Runs                int      `json:"runs"`
	Algorithms          []string `json:"algorithms"`
	Calibration         string   `json:"calibration"`
	ServerModel         string   `json:"server_model"`
	BatchGrowth         float64  `json:"batch_growth,omitempty"`
	LinkCost            string   `json:"link_cost"`
	PetalsSessionTokens int      `json:"petals_session_tokens"`
	Placement           string   `json:"placement"`
	MoveBandwidth       float64  `json:"move_bandwidth,omitempty"`
}

// modelName is the simulated model's name.
func (e *Experiment) modelName() string {
	switch {
	case e.o.ModelData != nil:
		return e.o.ModelData.Name
	case e.o.FleetData != nil:
		return e.o.FleetData.Model.Name
	}
	return sim.BLOOM176B().Name
}

// Config returns the experiment's options as a Config.
func (e *Experiment) Config() Config {
	o := e.o
	c := Config{
		Preset: o.Preset, Scenario: o.Scenario, Fleet: o.Fleet, ModelFile: o.Model, ClientCluster: o.ClientCluster, Model: e.modelName(),
		Rate: o.Rate, Requests: o.Requests, InputTokens: o.InputTokens, OutputTokens: o.OutputTokens,
		Seed: o.Seed, Runs: o.Runs, Calibration: o.Calibration, ServerModel: e.serverModel.String(),
		LinkCost: e.linkCost.String(), PetalsSessionTokens: o.PetalsSessionTokens, Placement: o.Placement,
		MoveBandwidth: o.MoveBandwidth,
	}
	if c.Placement == "" {
		c.Placement = sim.ProcessBatch
	}
	for _, a := range e.algs {
		c.Algorithms = append(c.Algorithms, a.Name)
	}
	if e.serverModel == sim.ServerBatched {
		c.BatchGrowth = o.BatchGrowth
	}
	if e.top != nil {
		c.Topology, c.TopologyName, c.GraphMLDelays, c.Servers, c.Eta = o.Topology, e.top.Name, o.GraphMLDelays, o.Servers, o.Eta
	}
	return c
}

// Report is the JSON document of one experiment (`swarm sim --json`).
type Report struct {
	// Schema is SchemaVersion.
	Schema string `json:"schema"`
	// Config is the experiment's configuration, field by field.
	Config Config `json:"config"`
	// Scenario is Describe's one-line header.
	Scenario string `json:"scenario"`
	// Warnings say why the results must not be compared with the paper's
	// (Experiment.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Decomposition splits the per-token gain of proposed over petals
	// into first-token and remaining-token parts (sim.Decompose), when
	// both ran.
	Decomposition *sim.Decomposition `json:"decomposition,omitempty"`
	// Calibration is "none" or "matlab" (Options.Calibration); the
	// constants themselves are in CalibrationConstants when not none.
	Calibration          string           `json:"calibration"`
	CalibrationConstants *sim.Calibration `json:"calibration_constants,omitempty"`
	// Results are the averaged results, one per algorithm.
	Results []sim.Result `json:"results"`
	// Paper holds the paper's numbers for the same setting, if it reports
	// any.
	Paper *Paper `json:"paper,omitempty"`
	// Comparisons are ours under both calibrations and the paper's
	// proposed/petals ratios with their first-token shares (`swarm sim
	// --preset`, when the paper reports the setting).
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Paper is what paper 003 reports for a setting: its tables and the
// PETALS and proposed cells.
type Paper struct {
	Source   string        `json:"source"`
	Petals   sim.PaperCell `json:"petals"`
	Proposed sim.PaperCell `json:"proposed"`
}

// Ratio returns proposed / petals per-token time of the paper's
// experiment and of its MATLAB simulator.
func (p Paper) Ratio() (experiment, matlab float64) {
	return p.Proposed.PerToken.Experiment / p.Petals.PerToken.Experiment, p.Proposed.PerToken.MATLAB / p.Petals.PerToken.MATLAB
}

// FirstShare returns the share of the paper's per-token gain (experiment
// and MATLAB) that comes from the first token, for sessions of
// outputTokens tokens (sim.Decompose on the paper's Tables C.7-C.10).
func (p Paper) FirstShare(outputTokens int) (experiment, matlab float64) {
	share := func(v func(sim.PaperValue) float64) float64 {
		d, _ := sim.Decompose(
			sim.Result{FirstToken: v(p.Proposed.FirstToken), RemainingToken: v(p.Proposed.RemainingToken), Runs: 1},
			sim.Result{FirstToken: v(p.Petals.FirstToken), RemainingToken: v(p.Petals.RemainingToken), Runs: 1}, outputTokens)
		return d.FirstShare
	}
	return share(func(x sim.PaperValue) float64 { return x.Experiment }), share(func(x sim.PaperValue) float64 { return x.MATLAB })
}

// Describe is the one-line scenario header of tables and reports.
func (e *Experiment) Describe() string { return e.describe("") }

// describe writes the header; the option named swept (a Sweep's Vary, or
// "") is shown as swept instead of its value.
func (e *Experiment) describe(swept string) string {
	o := e.o
	val := func(name, text string) string {
		if name == swept {
			return name + " swept"
		}
		return text
	}
	var where string
	if e.o.FleetData != nil {
		where = fmt.Sprintf("fleet file %s (%d servers)", o.Fleet, len(e.o.FleetData.Servers))
	} else if e.top == nil {
		c := topologies.PaperClusters()
		where = fmt.Sprintf("clustered (Table 2), client in %s", c.Names[o.ClientCluster])
	} else {
		lo, hi := e.top.DelayRange()
		where = fmt.Sprintf("topology %s (%d nodes, %d directed links, link delay %.3f..%.3f ms), %s, %s",
			e.top.Name, len(e.top.Nodes), len(e.top.Edges), lo*1e3, hi*1e3,
			val("servers", fmt.Sprintf("%d servers", o.Servers)), val("eta", fmt.Sprintf("eta %.2f", o.Eta)))
	}
	requests := fmt.Sprintf("%d requests", o.Requests)
	if swept == "rate" {
		requests = "requests per point shown in the JSON"
	}
	head := fmt.Sprintf("%s; %s, lI = %d, %s, %s, %s, %d runs, seed %d, calibration %s",
		where, e.modelName(), o.InputTokens, val("output-tokens", fmt.Sprintf("l_max = %d", o.OutputTokens)),
		val("rate", fmt.Sprintf("rate %g/s", o.Rate)), requests, o.Runs, o.Seed, o.Calibration)
	model := "servers " + e.serverModel.String()
	if e.serverModel == sim.ServerBatched {
		model += fmt.Sprintf(" (+%g%% per extra session, assumed)", 100*o.BatchGrowth)
	}
	head += fmt.Sprintf("; %s, link cost %s, placement %s", model, e.linkCost, e.Config().Placement)
	if o.MoveBandwidth > 0 {
		head += fmt.Sprintf(" (moves at %g GB/s)", o.MoveBandwidth/1e9)
	}
	if o.PetalsSessionTokens > 0 {
		head += fmt.Sprintf(", PETALS sessions reserve %d tokens", o.PetalsSessionTokens)
	}
	if o.Preset != "" {
		head += ", preset " + o.Preset
	}
	return head
}

// title is a short scenario name for plots.
func (e *Experiment) title() string {
	if e.o.FleetData != nil {
		return "fleet " + filepath.Base(e.o.Fleet)
	}
	if e.top == nil {
		return fmt.Sprintf("clustered, client in Cluster%d", e.o.ClientCluster)
	}
	return "topology " + e.top.Name
}

// Paper returns the paper's numbers for this setting (Tables 4, C.7, C.8
// for the clustered scenario; 5, C.9, C.10 for a paper deployment on a
// topology), if it reports any: only for its 100 requests of lI = 20.
func (e *Experiment) Paper() (Paper, bool) {
	o := e.o
	if o.InputTokens != 20 || o.Requests != 100 || len(e.warnings) > 0 || o.FleetData != nil || o.ModelData != nil {
		return Paper{}, false
	}
	if e.top == nil {
		petals, proposed, ok := sim.PaperClustered(o.ClientCluster, o.Rate, o.OutputTokens)
		return Paper{Source: "Tables 4, C.7, C.8", Petals: petals, Proposed: proposed}, ok
	}
	n, a100, dep := sim.PaperDeployment(e.top.Name)
	if !dep || n != o.Servers || int(math.Round(o.Eta*float64(n))) != a100 {
		return Paper{}, false
	}
	petals, proposed, ok := sim.PaperTopology(e.top.Name, o.Rate, o.OutputTokens)
	return Paper{Source: "Tables 5, C.9, C.10", Petals: petals, Proposed: proposed}, ok
}

// calibrationJSON returns the "calibration" and "calibration_constants"
// fields of the JSON documents.
func (e *Experiment) calibrationJSON() (string, *sim.Calibration) {
	c := e.Calibration()
	if c.IsNone() {
		return sim.CalibrationNone, nil
	}
	return c.Name, &c
}

// Report returns the JSON document of results.
func (e *Experiment) Report(results []sim.Result) Report {
	r := Report{Schema: SchemaVersion, Config: e.Config(), Scenario: e.Describe(), Warnings: e.Warnings(), Results: results}
	r.Calibration, r.CalibrationConstants = e.calibrationJSON()
	if d, ok := decomposition(results, e.o.OutputTokens); ok {
		r.Decomposition = &d
	}
	if p, ok := e.Paper(); ok {
		r.Paper = &p
	}
	return r
}

// WriteJSON writes Report(results), indented.
func (e *Experiment) WriteJSON(w io.Writer, results []sim.Result) error {
	return writeJSON(w, e.Report(results))
}

// WriteText writes the header, the calibration, the table of results
// (sim.WriteTable) and the paper's numbers when it has some.
func (e *Experiment) WriteText(w io.Writer, results []sim.Result) error {
	fmt.Fprintln(w, e.Describe())
	fmt.Fprintln(w, e.Calibration())
	for _, warn := range e.warnings {
		fmt.Fprintln(w, "WARNING: "+warn)
	}
	if err := sim.WriteTable(w, results, e.o.OutputTokens); err != nil {
		return err
	}
	if p, ok := e.Paper(); ok {
		sim.WritePaper(w, p.Source, p.Petals, p.Proposed)
		fe, fm := p.FirstShare(e.o.OutputTokens)
		fmt.Fprintf(w, "  share of the paper's gain from the first token: %.0f%% (%.0f%%)\n", 100*fe, 100*fm)
	}
	return nil
}

// Failed returns an error naming the first algorithm that failed in every
// run, with its reasons, or nil.
func Failed(results []sim.Result) error {
	for _, r := range results {
		if r.Runs == 0 {
			return fmt.Errorf("sim: %s failed in every run: %s", r.Algorithm, strings.Join(r.Errors, "; "))
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// decomposition is sim.Decompose of proposed over petals in results.
func decomposition(results []sim.Result, outputTokens int) (sim.Decomposition, bool) {
	var pro, pet *sim.Result
	for i := range results {
		switch results[i].Algorithm {
		case "proposed":
			pro = &results[i]
		case "petals":
			pet = &results[i]
		}
	}
	if pro == nil || pet == nil {
		return sim.Decomposition{}, false
	}
	return sim.Decompose(*pro, *pet, outputTokens)
}

// Comparison is one row of the paper comparison that `swarm sim --preset`
// prints: proposed/petals under one calibration, ours or the paper's.
type Comparison struct {
	// Source is "ours, calibration none", "ours, calibration matlab",
	// "paper experiment" or "paper MATLAB".
	Source string `json:"source"`
	// Ratio is proposed / petals per-token time.
	Ratio float64 `json:"ratio"`
	// FirstShare is the share of the gain from the first token.
	FirstShare float64 `json:"first_token_share"`
}

// Counterpart returns this experiment under the other calibration (none
// <-> matlab) with proposed and petals only, when the paper reports this
// setting (Paper), so that both can be put next to the paper's numbers;
// false otherwise.
func (e *Experiment) Counterpart() (*Experiment, bool) {
	if _, ok := e.Paper(); !ok {
		return nil, false
	}
	o := e.o
	o.Algorithms = []string{"proposed", "petals"}
	if o.Calibration == sim.CalibrationMATLAB {
		o.Calibration = sim.CalibrationNone
	} else {
		o.Calibration = sim.CalibrationMATLAB
	}
	c, err := New(o)
	if err != nil {
		return nil, false
	}
	return c, true
}

// Comparisons returns ours (results of this experiment and of its
// Counterpart, other) and the paper's proposed/petals ratios and
// first-token shares, mechanism-only first; nil without both algorithms
// or paper numbers.
func (e *Experiment) Comparisons(results, other []sim.Result) []Comparison {
	p, ok := e.Paper()
	if !ok {
		return nil
	}
	ours := func(cal string, res []sim.Result) (Comparison, bool) {
		d, ok := decomposition(res, e.o.OutputTokens)
		if !ok {
			return Comparison{}, false
		}
		var pro, pet float64
		for _, r := range res {
			switch r.Algorithm {
			case "proposed":
				pro = r.PerToken
			case "petals":
				pet = r.PerToken
			}
		}
		return Comparison{Source: "ours, calibration " + cal, Ratio: pro / pet, FirstShare: d.FirstShare}, true
	}
	a, okA := ours(e.o.Calibration, results)
	otherCal := sim.CalibrationMATLAB
	if e.o.Calibration == sim.CalibrationMATLAB {
		otherCal = sim.CalibrationNone
	}
	b, okB := ours(otherCal, other)
	if !okA || !okB {
		return nil
	}
	if e.o.Calibration == sim.CalibrationMATLAB {
		a, b = b, a
	}
	re, rm := p.Ratio()
	fe, fm := p.FirstShare(e.o.OutputTokens)
	return []Comparison{a, b, {Source: "paper experiment", Ratio: re, FirstShare: fe}, {Source: "paper MATLAB", Ratio: rm, FirstShare: fm}}
}

// WriteComparisons writes Comparisons as lines.
func WriteComparisons(w io.Writer, source string, cs []Comparison) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "proposed / petals per-token next to paper 003 %s:\n", source)
	for _, c := range cs {
		fmt.Fprintf(w, "  %-26s %.3f  (%.0f%% of the gain from the first token)\n", c.Source, c.Ratio, 100*c.FirstShare)
	}
}
