package enginebench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteJSON writes the report as one indented JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the medians of each engine, one row each, then the
// ratio ours/theirs.
func (r Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d thread(s), kernels %s, %d-token prefill, %d decode steps, medians of %d rounds", r.Model, r.Threads, r.Kernels, r.PromptTokens, r.GenTokens, r.Rounds)
	if r.LlamaCpp != nil {
		fmt.Fprint(w, " (interleaved with llama.cpp)")
	}
	fmt.Fprintln(w)
	if r.WeightBytesPerToken > 0 {
		fmt.Fprintf(w, "weights read per decode token: %.3f GB", float64(r.WeightBytesPerToken)/1e9)
		if r.BandwidthGBs > 0 {
			fmt.Fprintf(w, "; read bandwidth with %d thread(s): %.1f GB/s (%s)", r.Threads, r.BandwidthGBs, r.BandwidthKernel)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tload s\tprefill tok/s\tdecode tok/s\tof bandwidth\t")
	row := func(name string, f Figures) {
		frac := "-"
		if f.BandwidthFraction > 0 {
			frac = fmt.Sprintf("%.0f%%", 100*f.BandwidthFraction)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.2f\t%s\t\n", name, f.LoadS, f.PrefillTokS, f.DecodeTokS, frac)
	}
	row(r.Swarm.Engine, r.Swarm.Median)
	if l := r.LlamaCpp; l != nil {
		row(l.Engine, l.Median)
		fmt.Fprintf(tw, "ours/theirs\t%.2fx\t%.2fx\t%.2fx\t\t\n", r.Ratio.LoadS, r.Ratio.PrefillTokS, r.Ratio.DecodeTokS)
	}
	return tw.Flush()
}
