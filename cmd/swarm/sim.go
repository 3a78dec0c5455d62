package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/sim"
	"github.com/swarmllm/swarm/sim/experiment"
	"github.com/swarmllm/swarm/swarm"
)

// simOptions are the flags shared by `swarm sim` and `swarm sim sweep`.
type simOptions struct {
	experiment.Options
	json bool
}

func addSimFlags(f *pflag.FlagSet, o *simOptions) {
	o.Options = experiment.DefaultOptions()
	o.AddFlags(f)
	f.BoolVar(&o.json, "json", false, "print machine-readable JSON instead of a table")
}

func newSimCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim --scenario clustered|topology [--topology FILE] [flags]",
		Short: "Simulate a swarm serving sessions and compare placement/routing algorithms",
		Long: `sim runs the discrete-event simulator of paper 003's evaluation (Sec. 4,
App. C) with the same placement and routing code as the live swarm, and
prints a table like the paper's Table 4 (time per token over all tokens) with
the breakdown of Tables C.7/C.8 (first token, remaining tokens), averaged over
--runs Monte Carlo runs.

Model and hardware are the paper's: BLOOM-176B in 4 bits (70 blocks), A100
servers (tau 3.2197 ms, 86.13 GB) and MIG 1g.10gb slices (tau 16.2488 ms,
9.1 GB, at most 4 blocks), 100 ms per-token and 0.7049 lI + 67 ms per-input
overhead on top of the network RTT; --fleet FILE (a swarm plan fleet file)
and --model FILE replace them. Times are seconds; "runtime" is the wall
time of the placement and routing calls per run; "± 95%" the half-width of
the per-token mean's confidence interval over the runs. Under the table, the
gain of proposed over petals is split into first-token and remaining-token
shares.

--preset fills the paper's deployment of Table 4, Table 5 or Figs. 6-9;
the paper's numbers are printed next to ours only while the fleet is the
paper's, and a WARNING says why not otherwise. 'swarm sim tables' runs every
cell of Tables 4 and 5.

Servers step concurrent sessions as --server-model says: batched (default,
like our server; the batch curve is assumed, --batch-growth), serial (PETALS)
or independent (the paper). --placement batch|incremental|live runs the
proposed algorithm's placement as CG-BP, as the live swarm's join order, or
join order plus the live planner's replanning.

By default the model is mechanism-only. --calibration matlab adds the
constants the authors' MATLAB simulator (commit 3f78053) puts on every
session's first token and the paper never explains: allocation_delay_prop
(60 s, proposed), allocation_delay_petals (250 s for petals, opt-order,
opt-number and opt-rr; 350 s in test_general_case_online_large.m, used here
for the 26-server topology runs of Table 5 but not in sweeps) and
initial_delay (100 ms clustered, 70 ms topology), and rounds the waits of
proposed and opt-rr up to PETALS back-off steps (1, 3, 7, ... s). They add
to the first token and the total, not to the remaining tokens. The table
header and the JSON ("calibration") say which calibration was used.

Examples:
  swarm sim --scenario clustered --client-cluster 1 --rate 0.5 --output-tokens 64
  swarm sim --scenario clustered --client-cluster 1 --calibration matlab
  swarm sim --scenario topology --topology ../shared/topologies/repetita/2016TopologyZooUCL_unary/GtsCe.graph --servers 60 --runs 1
  swarm sim --preset table5-26 --topology ../shared/topologies/repetita/2016TopologyZooUCL_unary/GtsCe.graph --rate 0.1
  swarm sim tables --markdown
  swarm sim sweep --scenario topology --topology Abvt.graph --vary rate --plot rate.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Options, err = experiment.ApplyPreset(o.Options, cmd.Flags().Changed); err != nil {
				return usageError(err)
			}
			if err := loadSimFiles(&o.Options); err != nil {
				return err
			}
			if p, _ := experiment.LookupPreset(o.Preset); p != nil && p.Vary != "" {
				return usageError(fmt.Errorf("%w: --preset %s is a sweep (Fig. %s): use swarm sim sweep --preset %s",
					experiment.ErrBadOptions, p.Name, p.Name[3:], p.Name))
			}
			return simulate(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	addSimFlags(cmd.Flags(), &o)
	cmd.AddCommand(newSimSweepCmd(), newSimTablesCmd())
	return cmd
}

// sweepOptions are the flags of `swarm sim sweep`.
type sweepOptions struct {
	simOptions
	vary   string
	values []float64
	plot   string
}

func newSimSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep --vary servers|eta|rate|output-tokens [--values V,...] [--plot OUT.svg] [sim flags]",
		Short: "Vary one parameter and plot the time per token of each algorithm (paper 003 Figs. 6-9)",
		Long: `sweep runs 'swarm sim' for each value of one parameter and prints the average
time per token (over all tokens) of each algorithm; with --plot it draws the
curves of paper 003 Figs. 6-9 (gonum/plot; the format follows the file
extension: .svg, .png, .pdf, .eps).

Default values: servers 10%..90% of the nodes (Fig. 6), eta 0.1..1 (Fig. 7),
rate 0.1..1 per second with N_R = 200 * rate unless --requests is given
(Fig. 8), output-tokens 32..512 (Fig. 9). servers and eta need
--scenario topology. Progress goes to stderr.

Example:
  swarm sim sweep --scenario topology --topology Bellcanada.graph --vary eta --runs 5 --plot eta.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Options, err = experiment.ApplyPreset(o.Options, cmd.Flags().Changed); err != nil {
				return usageError(err)
			}
			if err := loadSimFiles(&o.Options); err != nil {
				return err
			}
			if p, _ := experiment.LookupPreset(o.Preset); p != nil && p.Vary != "" && o.vary == "" {
				o.vary = p.Vary
			}
			return runSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, cmd.Flags().Changed("requests"))
		},
	}
	addSimFlags(cmd.Flags(), &o.simOptions)
	cmd.Flags().StringVar(&o.vary, "vary", "", "parameter to vary: servers, eta, rate or output-tokens (required)")
	cmd.Flags().Float64SliceVar(&o.values, "values", nil, "comma-separated values of the varied parameter (default: see above)")
	cmd.Flags().StringVar(&o.plot, "plot", "", "write the curves to this file (.svg, .png, .pdf or .eps)")
	return cmd
}

// loadSimFiles loads --fleet and --model into o (FleetData, ModelData).
// A file that breaks its format is a usage error.
func loadSimFiles(o *experiment.Options) error {
	if o.Fleet != "" {
		ff, err := fleet.Load(o.Fleet)
		if err != nil {
			if errors.Is(err, fleet.ErrBadFleet) {
				return fmt.Errorf("%w: --fleet: %w", errUsage, err)
			}
			return fmt.Errorf("--fleet: %w", err)
		}
		l := o.OutputTokens
		if ff.MaxLength > 0 {
			l = ff.MaxLength
		}
		f, err := sim.FleetFromInput(ff.Input, "", o.InputTokens+l)
		if err != nil {
			return fmt.Errorf("%w: --fleet %s: %w", errUsage, o.Fleet, err)
		}
		f.Model.Name = "fleet " + filepath.Base(o.Fleet)
		o.FleetData = f
	}
	if o.Model != "" {
		var info swarm.ModelInfo
		if strings.EqualFold(filepath.Ext(o.Model), ".json") {
			data, err := os.ReadFile(o.Model)
			if err != nil {
				return fmt.Errorf("--model: %w", err)
			}
			if err := json.Unmarshal(data, &info); err != nil {
				return fmt.Errorf("%w: --model %s: want ModelInfo JSON (swarm model info --json): %w", errUsage, o.Model, err)
			}
		} else {
			m, err := blocks.Open(o.Model)
			if err != nil {
				return fmt.Errorf("--model: %w", err)
			}
			info = m.Info()
			m.Close()
		}
		spec, err := sim.ModelFromInfo(info)
		if err != nil {
			return fmt.Errorf("%w: --model %s: %w", errUsage, o.Model, err)
		}
		o.ModelData = &spec
	}
	return nil
}

// usageError marks bad options as a usage error (exit status 2).
func usageError(err error) error {
	if errors.Is(err, experiment.ErrBadOptions) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

// simulate runs `swarm sim`: the table (or JSON), and an error when an
// algorithm failed in every run.
func simulate(ctx context.Context, out io.Writer, o simOptions) error {
	e, err := experiment.New(o.Options)
	if err != nil {
		return usageError(err)
	}
	res, err := e.Run(ctx, nil)
	if err != nil {
		return err
	}
	// With a preset the paper reports, also run the other calibration, so
	// that mechanism-only and calibrated ratios stand next to the paper's.
	var cmp []experiment.Comparison
	if c, ok := e.Counterpart(); ok && o.Preset != "" {
		other, err := c.Run(ctx, nil)
		if err != nil {
			return err
		}
		cmp = e.Comparisons(res, other)
	}
	if o.json {
		rep := e.Report(res)
		rep.Comparisons = cmp
		err = writeJSONOut(out, rep)
	} else if err = e.WriteText(out, res); err == nil {
		p, _ := e.Paper()
		experiment.WriteComparisons(out, p.Source, cmp)
	}
	if err != nil {
		return err
	}
	return experiment.Failed(res)
}

// progress returns a progress bar's tick and finish on errOut when it is
// a terminal, and no-ops otherwise (a log file gets no bar).
func progress(errOut io.Writer, total int, what string) (tick func(), finish func()) {
	f, ok := errOut.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return func() {}, func() {}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(errOut),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish())
	return func() { _ = bar.Add(1) }, func() { _ = bar.Finish() }
}

// runSweep runs `swarm sim sweep` with a progress bar on errOut when it is
// a terminal.
func runSweep(ctx context.Context, out, errOut io.Writer, o sweepOptions, requestsSet bool) error {
	s, err := experiment.NewSweep(o.Options, o.vary, o.values, requestsSet)
	if err != nil {
		return usageError(err)
	}
	tick, finish := progress(errOut, s.Runs(), "sweep "+o.vary)
	points, err := s.Run(ctx, tick)
	if err != nil {
		return err
	}
	finish()
	if o.plot != "" {
		if err := s.Plot(o.plot, points); err != nil {
			return err
		}
	}
	if o.json {
		return s.WriteJSON(out, points)
	}
	if err := s.WriteText(out, points); err != nil {
		return err
	}
	if o.plot != "" {
		fmt.Fprintf(out, "plot written to %s\n", o.plot)
	}
	return nil
}

// tablesOptions are the flags of `swarm sim tables`.
type tablesOptions struct {
	simOptions
	dir      string
	markdown bool
}

func newSimTablesCmd() *cobra.Command {
	var o tablesOptions
	cmd := &cobra.Command{
		Use:   "tables [--topology-dir DIR] [--runs N] [--markdown|--json] [sim flags]",
		Short: "Simulate every cell of paper 003's Tables 4 and 5, mechanism-only and calibrated, next to the paper's",
		Long: `tables runs proposed and petals in each of the 24 cells of paper 003's Tables 4
and 5 (3 client clusters, AboveNet with 9 servers, BellCanada and GTS-CE with
26; rates 0.1 and 0.5 per second, l_max 64 and 128; lI = 20, 100 requests),
each from its preset (table4-clustered, table5-abovenet-9, table5-26), once
mechanism-only and once with --calibration matlab, and prints for each the
proposed/petals per-token ratio with its 95% confidence half-width and the
share of the gain that comes from the first token, next to the paper's
experiment and MATLAB ratios and shares (Tables 4, 5, C.7-C.10).

The other sim flags (--runs, --seed, --parallel, --server-model,
--batch-growth, --link-cost, --petals-session-tokens, --placement) apply to
every cell; scenario, topology, servers, eta, rate, tokens, requests and
calibration are set per cell. Progress goes to stderr when it is a terminal.

Example:
  swarm sim tables --runs 20 --markdown`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTables(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	addSimFlags(cmd.Flags(), &o.simOptions)
	cmd.Flags().StringVar(&o.dir, "topology-dir", "../shared/topologies/repetita/2016TopologyZooUCL_unary",
		"directory of the Repetita files Abvt.graph, Bellcanada.graph and GtsCe.graph")
	cmd.Flags().BoolVar(&o.markdown, "markdown", false, "print a Markdown table (the README's) instead of a text table")
	return cmd
}

// runTables runs `swarm sim tables`.
func runTables(ctx context.Context, out, errOut io.Writer, o tablesOptions) error {
	tick, finish := progress(errOut, 2*experiment.TableCells()*o.Runs, "tables")
	cells, cfg, err := experiment.RunTables(ctx, o.Options, o.dir, tick)
	if err != nil {
		return usageError(err)
	}
	finish()
	if o.json {
		return writeJSONOut(out, experiment.TablesReport{Schema: experiment.SchemaVersion, Config: cfg, Cells: cells})
	}
	fmt.Fprintf(out, "paper 003 Tables 4 and 5: proposed / petals per-token time, ours (%d runs, servers %s, link cost %s, placement %s) vs the paper's\n",
		o.Runs, cfg.ServerModel, cfg.LinkCost, cfg.Placement)
	return experiment.WriteTables(out, cells, o.markdown)
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
