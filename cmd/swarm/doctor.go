package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/parity"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

const doctorLong = `doctor checks an engine backend (--device) against a reference backend
(--reference, the CPU by default) before it serves blocks.

For every architecture of --archs and weight dtype of --dtypes it synthesizes
a tiny random-weight GGUF model (2 blocks, 4 query heads sharing 2 KV heads,
d_model 128, or 256 for the dtypes of 256-value blocks) in a temporary
directory and runs the same seeded random hidden states through both
backends' engines over all blocks: a prefill of --prefill tokens, then
--decode single-token steps, each fed fresh inputs. A row passes when

  - the largest |candidate - reference| of a step, divided by the step's
    largest |reference|, stays within the bound (--bound, or by default
    1e-5 for the same precision on both sides, 2e-2 where a side keeps f16
    caches or computes in f16, 5e-2 for quantized weights computed
    differently: see blocks/parity's DefaultBound);
  - truncating the candidate's session to its last --replay positions and
    running them again reproduces its first outputs bit for bit;
  - if its engine batches sessions (blocks.BatchEngine), one ForwardBatch of
    two sessions gives each bit for bit what it computes alone.

Then it generates --greedy-tokens tokens greedily after --prompt from
stories260K (a real trained llama2.c model, --stories) on both backends and
requires identical token ids; without the model the check is skipped and the
output says why.

It prints a progress line per model on stderr, then a table (or with --json
one object {"results":[...],"greedy":{...},"pass":bool}), and exits with
status 1 when any check fails, or at once when the backend says it cannot
run on this machine (no GPU).

Example:
  swarm doctor --device cuda --cache-dtype f16
  swarm doctor --device cpu --archs llama,qwen3 --dtypes f32,q8_0 --json`

// doctorOptions are the flags of `swarm doctor`.
type doctorOptions struct {
	device, reference string
	cacheDType        string
	archs, dtypes     []string
	stories           string
	prompt            string
	greedyTokens      int
	opts              parity.Options
	json              bool
}

// doctorRow is one model's comparison: the parity report, or the error
// that stopped it (an unsupported dtype on the candidate, say).
type doctorRow struct {
	parity.Report
	Error string `json:"error,omitempty"`
}

// doctorGreedy is the greedy check: its report, or why it was skipped or
// could not run.
type doctorGreedy struct {
	*parity.GreedyReport
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
	// Pass is true unless the check ran and failed (a skipped check does
	// not fail the doctor).
	Pass bool `json:"pass"`
}

// doctorResult is what --json prints.
type doctorResult struct {
	Results []doctorRow  `json:"results"`
	Greedy  doctorGreedy `json:"greedy"`
	Pass    bool         `json:"pass"`
}

func newDoctorCmd() *cobra.Command {
	o := doctorOptions{opts: parity.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "doctor --device NAME [--reference cpu] [--archs A,...] [--dtypes D,...] [--cache-dtype f16|f32] [--stories PATH] [--json]",
		Short: "Check a compute backend against the CPU on synthesized models and stories260K",
		Long:  doctorLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, cmd.Flags().Changed("stories"))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	d := parity.DefaultOptions()
	f := cmd.Flags()
	f.StringVar(&o.device, "device", "", "the backend to check, one of the engine backends built in: "+strings.Join(blocks.BackendNames(), ", ")+" (required)")
	f.StringVar(&o.reference, "reference", blocks.CPUBackendName, "the backend it is compared against")
	f.StringVar(&o.cacheDType, "cache-dtype", "", "attention-cache dtype of the checked backend, f32 or f16; empty = the backend's default (the reference keeps its own)")
	f.StringSliceVar(&o.archs, "archs", slices.Clone(synth.Archs), "comma-separated architectures of the synthesized models")
	f.StringSliceVar(&o.dtypes, "dtypes", slices.Clone(parity.SynthDTypes), "comma-separated weight dtypes of the synthesized models")
	f.StringVar(&o.stories, "stories", "", "stories260K for the greedy check: its directory (stories260K.bin and tok512.bin), a llama2.c .bin (tok512.bin beside it) or a .gguf; "+
		"default $SWARM_SHARED/models/stories260K, else shared/models/stories260K beside the working directory or a directory above it")
	f.StringVar(&o.prompt, "prompt", "Once upon a time", "prompt of the greedy check")
	f.IntVar(&o.greedyTokens, "greedy-tokens", 64, "tokens generated by the greedy check; 0 skips it")
	f.Uint64Var(&o.opts.Seed, "seed", d.Seed, "seed of the random hidden states and of the synthesized weights")
	f.IntVar(&o.opts.Prefill, "prefill", d.Prefill, "tokens of the prefill step")
	f.IntVar(&o.opts.Decode, "decode", d.Decode, "single-token decode steps after the prefill")
	f.IntVar(&o.opts.Replay, "replay", d.Replay, "last positions truncated and replayed on the checked backend; 0 skips the replay check")
	f.Float64Var(&o.opts.Bound, "bound", 0, "largest relative error that passes, for every row; 0 = the default bound of each row's precision")
	f.BoolVar(&o.json, "json", false, `print {"results":[{"model","arch","dtype","max_abs_err","max_rel_err","bound","replay_exact","batch_exact","pass",...}],"greedy":{...},"pass":bool}`)
	return cmd
}

// doctorBackends resolves --reference, --device and --cache-dtype.
func doctorBackends(o doctorOptions) (ref, cand blocks.Backend, err error) {
	if o.device == "" {
		return nil, nil, fmt.Errorf("%w: --device is required (one of: %s)", errUsage, strings.Join(blocks.BackendNames(), ", "))
	}
	if cand, err = blocks.LookupBackend(o.device); err != nil {
		return nil, nil, fmt.Errorf("%w: --device: %w", errUsage, err)
	}
	if ref, err = blocks.LookupBackend(o.reference); err != nil {
		return nil, nil, fmt.Errorf("%w: --reference: %w", errUsage, err)
	}
	if o.cacheDType != "" {
		d, err := swarm.ParseDType(o.cacheDType)
		if err != nil || (d != swarm.DTypeF32 && d != swarm.DTypeF16) {
			return nil, nil, fmt.Errorf("%w: --cache-dtype %q, want f32 or f16", errUsage, o.cacheDType)
		}
		if cand, err = blocks.WithCacheDType(cand, d); err != nil {
			return nil, nil, fmt.Errorf("%w: --cache-dtype: %w", errUsage, err)
		}
	}
	return ref, cand, nil
}

// doctorModels checks --archs and --dtypes and returns them normalized.
func doctorModels(o doctorOptions) (archs, dtypes []string, err error) {
	for _, a := range o.archs {
		name, err := synth.ParseArch(a)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --archs: %w", errUsage, err)
		}
		archs = append(archs, name)
	}
	for _, dt := range o.dtypes {
		name := strings.ToLower(strings.TrimSpace(dt))
		if !slices.Contains(parity.SynthDTypes, name) {
			return nil, nil, fmt.Errorf("%w: --dtypes: unknown dtype %q (want some of %s)", errUsage, dt, strings.Join(parity.SynthDTypes, ","))
		}
		dtypes = append(dtypes, name)
	}
	if len(archs) == 0 || len(dtypes) == 0 {
		return nil, nil, fmt.Errorf("%w: --archs and --dtypes must each name at least one", errUsage)
	}
	return archs, dtypes, nil
}

func runDoctor(ctx context.Context, out, errOut io.Writer, o doctorOptions, storiesSet bool) error {
	ref, cand, err := doctorBackends(o)
	if err != nil {
		return err
	}
	archs, dtypes, err := doctorModels(o)
	if err != nil {
		return err
	}
	if err := o.opts.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if o.greedyTokens < 0 {
		return fmt.Errorf("%w: --greedy-tokens %d, want >= 0", errUsage, o.greedyTokens)
	}
	stories, storiesWhy := findStories(o.stories)
	if storiesSet && stories == "" {
		return fmt.Errorf("%w: --stories: %s", errUsage, storiesWhy)
	}
	if u, ok := cand.(interface{ Usable() error }); ok {
		if err := u.Usable(); err != nil {
			return fmt.Errorf("doctor: --device %s cannot run here: %w", o.device, err)
		}
	}
	dir, err := os.MkdirTemp("", "swarm-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(errOut, "swarm doctor: %s (cache %s) against %s (cache %s), %d models\n",
		cand.Name(), cand.CacheDType(), ref.Name(), ref.CacheDType(), len(archs)*len(dtypes))
	res := doctorResult{Results: []doctorRow{}, Pass: true}
	n := 0
	for _, arch := range archs {
		for _, dt := range dtypes {
			n++
			start := time.Now()
			row, err := doctorCompare(ctx, ref, cand, dir, arch, dt, o.opts)
			if err != nil {
				return err // ctx ended, or the temporary directory failed
			}
			res.Results = append(res.Results, row)
			res.Pass = res.Pass && row.Pass
			fmt.Fprintf(errOut, "swarm doctor: [%d/%d] %s %s: %s (%s)\n", n, len(archs)*len(dtypes), arch, dt,
				rowSummary(row), time.Since(start).Round(time.Millisecond))
		}
	}

	switch {
	case o.greedyTokens == 0:
		res.Greedy = doctorGreedy{Skipped: "--greedy-tokens is 0", Pass: true}
	case stories == "":
		res.Greedy = doctorGreedy{Skipped: storiesWhy, Pass: true}
	default:
		fmt.Fprintf(errOut, "swarm doctor: greedy check on %s, %d tokens\n", stories, o.greedyTokens)
		res.Greedy = doctorGreedyCheck(ctx, ref, cand, stories, o.prompt, o.greedyTokens)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	res.Pass = res.Pass && res.Greedy.Pass

	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := printDoctorTable(out, ref, cand, res); err != nil {
		return err
	}
	if !res.Pass {
		failed := 0
		for _, r := range res.Results {
			if !r.Pass {
				failed++
			}
		}
		if !res.Greedy.Pass {
			failed++
		}
		return fmt.Errorf("doctor: %s failed %d of %d checks", cand.Name(), failed, len(res.Results)+1)
	}
	return nil
}

// doctorCompare synthesizes one model into dir and compares the backends
// on it. A comparison that fails to run (an engine that cannot load the
// dtype) is a failed row; only ctx's end and file-system errors of the
// synthesis are returned.
func doctorCompare(ctx context.Context, ref, cand blocks.Backend, dir, arch, dtype string, opts parity.Options) (doctorRow, error) {
	row := doctorRow{Report: parity.Report{Model: arch + "-" + dtype, Arch: arch, DType: dtype,
		Reference: ref.Name(), Candidate: cand.Name(), RefCacheDType: ref.CacheDType(), CandCacheDType: cand.CacheDType(),
		RefComputeDType: parity.ComputeDType(ref), CandComputeDType: parity.ComputeDType(cand)}}
	path, err := parity.SynthModel(dir, arch, dtype, opts.Seed)
	if err != nil {
		return row, err
	}
	defer os.Remove(path)
	m, err := blocks.Open(path)
	if err != nil {
		return row, err
	}
	defer m.Close()
	rep, err := parity.Compare(ctx, ref, cand, m, opts)
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	if err != nil {
		row.Error = err.Error()
		row.Failures = []string{row.Error}
		return row, nil
	}
	// The requested names: GGUF calls mistral llama, and q4_k_m's
	// ModelInfo.DType is its main dtype q4_k.
	rep.Model, rep.Arch, rep.DType = row.Model, arch, dtype
	row.Report = rep
	return row, nil
}

// findStories resolves --stories to a model file, or returns "" and why
// not. An empty flag looks in $SWARM_SHARED/models/stories260K, else in
// shared/models/stories260K beside the working directory or a directory
// above it (the ../shared of a checkout).
func findStories(flag string) (path, why string) {
	if flag != "" {
		return storiesFile(flag)
	}
	if env := os.Getenv("SWARM_SHARED"); env != "" {
		return storiesFile(filepath.Join(env, "models", "stories260K"))
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("stories260K not found: %v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if p, _ := storiesFile(filepath.Join(dir, "shared", "models", "stories260K")); p != "" {
			return p, ""
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Sprintf("stories260K not found in shared/models beside %s or a directory above it (set SWARM_SHARED or --stories)", wd)
		}
	}
}

// storiesFile is the model file of a stories260K path: a directory's
// stories260K.bin, or the file itself.
func storiesFile(p string) (string, string) {
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Sprintf("stories260K not found: %v", err)
	}
	if st.IsDir() {
		p = filepath.Join(p, "stories260K.bin")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Sprintf("stories260K not found: %v", err)
		}
	}
	return p, ""
}

// doctorGreedyCheck runs parity.Greedy on the stories260K file path (a
// llama2.c .bin takes tok512.bin from beside it).
func doctorGreedyCheck(ctx context.Context, ref, cand blocks.Backend, path, prompt string, n int) doctorGreedy {
	var opts []blocks.Option
	if tok := filepath.Join(filepath.Dir(path), "tok512.bin"); strings.HasSuffix(path, ".bin") {
		if _, err := os.Stat(tok); err == nil {
			opts = append(opts, blocks.WithTokenizer(tok))
		}
	}
	m, err := blocks.Open(path, opts...)
	if err != nil {
		return doctorGreedy{Error: err.Error()}
	}
	defer m.Close()
	rep, err := parity.Greedy(ctx, ref, cand, m, prompt, n)
	rep.Model = path
	g := doctorGreedy{GreedyReport: &rep, Pass: err == nil && rep.Pass}
	if err != nil {
		g.Error = err.Error()
		if errors.Is(err, blocks.ErrNoTokenizer) {
			g.Error += " (a llama2.c .bin needs tok512.bin beside it)"
		}
	}
	return g
}

// rowSummary is a row's progress line: its errors and verdict.
func rowSummary(r doctorRow) string {
	if r.Error != "" {
		return "FAIL: " + r.Error
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL: " + strings.Join(r.Failures, "; ")
	}
	return fmt.Sprintf("max abs %.3g, max rel %.3g (bound %.3g), replay %s, batch %s: %s",
		r.MaxAbsErr, r.MaxRelErr, r.Bound, exactText(r.ReplayExact), r.BatchText(), verdict)
}

func exactText(exact bool) string {
	if exact {
		return "exact"
	}
	return "differs"
}

// printDoctorTable prints the rows, the greedy check and the verdict.
func printDoctorTable(out io.Writer, ref, cand blocks.Backend, res doctorResult) error {
	fmt.Fprintf(out, "%s (cache %s) against %s (cache %s)\n", cand.Name(), cand.CacheDType(), ref.Name(), ref.CacheDType())
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ARCH\tDTYPE\tMAX ABS\tMAX REL\tBOUND\tREPLAY\tBATCH\tRESULT")
	for _, r := range res.Results {
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL"
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\tFAIL: %s\n", r.Arch, r.DType, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3g\t%.3g\t%.3g\t%s\t%s\t%s\n", r.Arch, r.DType, r.MaxAbsErr, r.MaxRelErr, r.Bound,
			exactText(r.ReplayExact), r.BatchText(), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	g := res.Greedy
	switch {
	case g.Skipped != "":
		fmt.Fprintf(out, "greedy: skipped: %s\n", g.Skipped)
	case g.Error != "":
		fmt.Fprintf(out, "greedy: FAIL: %s\n", g.Error)
	case g.FirstDiff == -1:
		fmt.Fprintf(out, "greedy: %s, %d tokens after %q: identical ids: PASS\n", g.Model, len(g.RefIDs), g.Prompt)
	default:
		fmt.Fprintf(out, "greedy: %s after %q: ids differ at token %d: FAIL\n  %s: %q\n  %s: %q\n", g.Model, g.Prompt, g.FirstDiff,
			g.Reference, g.RefText, g.Candidate, g.CandText)
	}
	verdict := "PASS"
	if !res.Pass {
		verdict = "FAIL"
	}
	_, err := fmt.Fprintln(out, verdict)
	return err
}
