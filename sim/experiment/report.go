package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/topologies"
)

// Report is the JSON document of one experiment (`swarm sim --json`).
type Report struct {
	// Scenario is Describe's one-line header.
	Scenario string `json:"scenario"`
	// Calibration is "none" or "matlab" (Options.Calibration); the
	// constants themselves are in CalibrationConstants when not none.
	Calibration          string           `json:"calibration"`
	CalibrationConstants *sim.Calibration `json:"calibration_constants,omitempty"`
	// Results are the averaged results, one per algorithm.
	Results []sim.Result `json:"results"`
	// Paper holds the paper's numbers for the same setting, if it reports
	// any.
	Paper *Paper `json:"paper,omitempty"`
}

// Paper is what paper 003 reports for a setting: its tables and the
// PETALS and proposed cells.
type Paper struct {
	Source   string        `json:"source"`
	Petals   sim.PaperCell `json:"petals"`
	Proposed sim.PaperCell `json:"proposed"`
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
	if e.top == nil {
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
	return fmt.Sprintf("%s; BLOOM-176B, lI = %d, %s, %s, %s, %d runs, seed %d, calibration %s",
		where, o.InputTokens, val("output-tokens", fmt.Sprintf("l_max = %d", o.OutputTokens)),
		val("rate", fmt.Sprintf("rate %g/s", o.Rate)), requests, o.Runs, o.Seed, o.Calibration)
}

// title is a short scenario name for plots.
func (e *Experiment) title() string {
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
	if o.InputTokens != 20 || o.Requests != 100 {
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
	r := Report{Scenario: e.Describe(), Results: results}
	r.Calibration, r.CalibrationConstants = e.calibrationJSON()
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
	if err := sim.WriteTable(w, results, e.o.OutputTokens); err != nil {
		return err
	}
	if p, ok := e.Paper(); ok {
		sim.WritePaper(w, p.Source, p.Petals, p.Proposed)
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
