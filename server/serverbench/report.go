package serverbench

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

// WriteTable writes the report as aligned text: one row per concurrency,
// then the prefill comparison.
func (r Report) WriteTable(w io.Writer) error {
	head := fmt.Sprintf("device %s; CPU kernels %s", r.Device, r.Kernels)
	if r.PeakGFLOPs > 0 {
		head += fmt.Sprintf("; peak %.1f GFLOP/s (swarm bench flops)", r.PeakGFLOPs)
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	if r.TauS > 0 {
		line := fmt.Sprintf("engine decode step (server measure, no websocket): %.3f ms per block per token", 1e3*r.TauS)
		for _, b := range r.TauBatch {
			line += fmt.Sprintf("; batch %d %.3f ms per block per step", b.Batch, 1e3*b.Tau)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.LlamaCpp == nil {
		fmt.Fprintln(tw, "concurrency\taggregate tok/s\tTPOT ms\tGFLOP/s\tof peak\t")
	} else {
		fmt.Fprintln(tw, "concurrency\taggregate tok/s\tTPOT ms\tGFLOP/s\tof peak\tllama.cpp tok/s\tours/theirs\t")
	}
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%d\t%.2f\t%.1f\t%.1f\t%s\t", res.Concurrency, res.AggregateTokS, 1e3*res.TPOT, res.GFLOPs, ofPeak(res.GFLOPs, r.PeakGFLOPs))
		if r.LlamaCpp != nil {
			fmt.Fprintf(tw, "%.2f\t%.2fx\t", res.LlamaCppTokS, res.Ratio)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := r.Prefill; p != nil {
		_, err := fmt.Fprintf(w, "prefill of %d tokens: %.2f tok/s in one step (%.1f GFLOP/s, %s of peak), %.2f tok/s one token per step (%.2fx)\n",
			p.Tokens, p.BatchedTokS, p.BatchedGFLOPs, ofPeak(p.BatchedGFLOPs, r.PeakGFLOPs), p.DecodePathTokS, p.Speedup)
		return err
	}
	return nil
}

// ofPeak formats g as a percentage of peak ("-" without a peak).
func ofPeak(g, peak float64) string {
	if peak <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*g/peak)
}
