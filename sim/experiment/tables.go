package experiment

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/swarmllm/swarm/sim"
)

// TableSide is our result for one cell of Tables 4/5 under one
// calibration: the two algorithms' per-token times, their ratio and the
// gain's decomposition.
type TableSide struct {
	Proposed   float64 `json:"proposed_per_token"`
	Petals     float64 `json:"petals_per_token"`
	ProposedCI float64 `json:"proposed_per_token_ci95"`
	PetalsCI   float64 `json:"petals_per_token_ci95"`
	// ProposedFirst and PetalsFirst are the first-token times (s).
	ProposedFirst float64 `json:"proposed_first_token"`
	PetalsFirst   float64 `json:"petals_first_token"`
	// Ratio is Proposed / Petals.
	Ratio float64 `json:"ratio"`
	// FirstShare is the share of the gain from the first token
	// (sim.Decomposition.FirstShare).
	FirstShare float64 `json:"first_token_share"`
}

// TableCell is one cell of paper 003's Tables 4 and 5: a row (client
// cluster or topology), a column (rate, l_max), ours mechanism-only and
// calibrated, and the paper's.
type TableCell struct {
	Table        string  `json:"table"` // "4" or "5"
	Row          string  `json:"row"`   // Cluster0..2, Abvt, Bellcanada, GtsCe
	Preset       string  `json:"preset"`
	Rate         float64 `json:"rate"`
	OutputTokens int     `json:"output_tokens"`
	// Mechanism is calibration none, Calibrated calibration matlab.
	Mechanism  TableSide `json:"mechanism"`
	Calibrated TableSide `json:"calibrated"`
	// Paper is the paper's cell; PaperRatio and MATLABRatio its
	// proposed/petals ratios, PaperFirstShare and MATLABFirstShare the
	// share of its gain from the first token (Tables C.7-C.10).
	Paper            Paper   `json:"paper"`
	PaperRatio       float64 `json:"paper_ratio"`
	MATLABRatio      float64 `json:"matlab_ratio"`
	PaperFirstShare  float64 `json:"paper_first_token_share"`
	MATLABFirstShare float64 `json:"matlab_first_token_share"`
}

// TablesReport is the JSON document of `swarm sim tables`.
type TablesReport struct {
	Schema string `json:"schema"`
	// Config is the options every cell shares (the cell fixes scenario,
	// topology, servers, eta, client cluster, rate, l_max, requests, lI
	// and calibration).
	Config Config      `json:"config"`
	Cells  []TableCell `json:"cells"`
}

// tableRows are the rows of Tables 4 and 5 with their presets.
var tableRows = []struct {
	table, row, preset, file string
	cluster                  int
}{
	{"4", "Cluster0", "table4-clustered", "", 0},
	{"4", "Cluster1", "table4-clustered", "", 1},
	{"4", "Cluster2", "table4-clustered", "", 2},
	{"5", "Abvt", "table5-abovenet-9", "Abvt.graph", 0},
	{"5", "Bellcanada", "table5-26", "Bellcanada.graph", 0},
	{"5", "GtsCe", "table5-26", "GtsCe.graph", 0},
}

// tableColumns are the columns of Tables 4 and 5.
var tableColumns = []struct {
	rate   float64
	output int
}{{0.1, 64}, {0.1, 128}, {0.5, 64}, {0.5, 128}}

// TableCells returns the number of cells RunTables simulates (24), each
// twice (mechanism-only and calibrated).
func TableCells() int { return len(tableRows) * len(tableColumns) }

// RunTables simulates every cell of Tables 4 and 5 with the proposed and
// PETALS algorithms, mechanism-only and with the MATLAB calibration,
// each cell from its preset (table4-clustered, table5-abovenet-9,
// table5-26) on top of base (runs, seed, parallel, server model, link
// cost, PETALS session tokens, placement, GraphML delays). topologyDir
// holds Abvt.graph, Bellcanada.graph and GtsCe.graph (Repetita). tick is
// called after every run. Errors are New's and Run's, naming the cell.
func RunTables(ctx context.Context, base Options, topologyDir string, tick func()) ([]TableCell, Config, error) {
	var cells []TableCell
	var cfg Config
	for _, row := range tableRows {
		for _, col := range tableColumns {
			cell := TableCell{Table: row.table, Row: row.row, Preset: row.preset, Rate: col.rate, OutputTokens: col.output}
			for _, cal := range []string{sim.CalibrationNone, sim.CalibrationMATLAB} {
				o := base
				o.Preset, o.Algorithms, o.Calibration = row.preset, []string{"proposed", "petals"}, cal
				o.ClientCluster, o.Rate, o.OutputTokens = row.cluster, col.rate, col.output
				o.Topology = ""
				if row.file != "" {
					o.Topology = filepath.Join(topologyDir, row.file)
				}
				o.Servers, o.Eta = 0, 0
				o, err := ApplyPreset(o, nil)
				if err != nil {
					return nil, cfg, err
				}
				e, err := New(o)
				if err != nil {
					return nil, cfg, fmt.Errorf("table %s %s rate %g l_max %d: %w", row.table, row.row, col.rate, col.output, err)
				}
				res, err := e.Run(ctx, tick)
				if err != nil {
					return nil, cfg, fmt.Errorf("table %s %s rate %g l_max %d: %w", row.table, row.row, col.rate, col.output, err)
				}
				if err := Failed(res); err != nil {
					return nil, cfg, fmt.Errorf("table %s %s rate %g l_max %d: %w", row.table, row.row, col.rate, col.output, err)
				}
				side := TableSide{Proposed: res[0].PerToken, Petals: res[1].PerToken,
					ProposedCI: res[0].PerTokenCI, PetalsCI: res[1].PerTokenCI, Ratio: res[0].PerToken / res[1].PerToken,
					ProposedFirst: res[0].FirstToken, PetalsFirst: res[1].FirstToken}
				if d, ok := sim.Decompose(res[0], res[1], col.output); ok {
					side.FirstShare = d.FirstShare
				}
				if cal == sim.CalibrationNone {
					cell.Mechanism = side
					cfg = e.Config()
				} else {
					cell.Calibrated = side
				}
				p, ok := e.Paper()
				if !ok {
					return nil, cfg, fmt.Errorf("table %s %s rate %g l_max %d: no paper cell (warnings: %v)", row.table, row.row, col.rate, col.output, e.Warnings())
				}
				cell.Paper = p
				cell.PaperRatio, cell.MATLABRatio = p.Ratio()
				cell.PaperFirstShare, cell.MATLABFirstShare = p.FirstShare(col.output)
			}
			cells = append(cells, cell)
		}
	}
	return cells, cfg, nil
}

// WriteTables writes the cells as a table: ours mechanism-only and
// calibrated, proposed/petals per-token ratio and the share of the gain
// from the first token, next to the paper's experiment and MATLAB. With
// markdown, a Markdown table (the README's).
func WriteTables(w io.Writer, cells []TableCell, markdown bool) error {
	head := []string{"table", "row", "rate", "l_max", "ratio mech. ± 95%", "first-token share mech.",
		"ratio calib.", "first-token share calib.", "paper ratio exp. (MATLAB)", "paper first-token share exp. (MATLAB)"}
	row := func(c TableCell) []string {
		// The ratio's CI from the two means' CIs (first order).
		ci := c.Mechanism.Ratio * (c.Mechanism.ProposedCI/c.Mechanism.Proposed + c.Mechanism.PetalsCI/c.Mechanism.Petals)
		return []string{c.Table, c.Row, fmt.Sprintf("%g", c.Rate), fmt.Sprintf("%d", c.OutputTokens),
			fmt.Sprintf("%.3f ± %.3f", c.Mechanism.Ratio, ci), fmt.Sprintf("%.0f%%", 100*c.Mechanism.FirstShare),
			fmt.Sprintf("%.3f", c.Calibrated.Ratio), fmt.Sprintf("%.0f%%", 100*c.Calibrated.FirstShare),
			fmt.Sprintf("%.3f (%.3f)", c.PaperRatio, c.MATLABRatio),
			fmt.Sprintf("%.0f%% (%.0f%%)", 100*c.PaperFirstShare, 100*c.MATLABFirstShare)}
	}
	if markdown {
		line := func(cols []string) {
			fmt.Fprint(w, "|")
			for _, c := range cols {
				fmt.Fprintf(w, " %s |", c)
			}
			fmt.Fprintln(w)
		}
		line(head)
		sep := make([]string, len(head))
		for i := range sep {
			sep[i] = "---"
		}
		line(sep)
		for _, c := range cells {
			line(row(c))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, h := range head {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, h)
	}
	fmt.Fprintln(tw, "\t")
	for _, c := range cells {
		for i, v := range row(c) {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}
