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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.LlamaCpp == nil {
		fmt.Fprintln(tw, "concurrency\taggregate tok/s\tTPOT ms\tGFLOP/s\t")
	} else {
		fmt.Fprintln(tw, "concurrency\taggregate tok/s\tTPOT ms\tGFLOP/s\tllama.cpp tok/s\tours/theirs\t")
	}
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%d\t%.2f\t%.1f\t%.1f\t", res.Concurrency, res.AggregateTokS, 1e3*res.TPOT, res.GFLOPs)
		if r.LlamaCpp != nil {
			fmt.Fprintf(tw, "%.2f\t%.2fx\t", res.LlamaCppTokS, res.Ratio)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := r.Prefill; p != nil {
		_, err := fmt.Fprintf(w, "prefill of %d tokens: %.2f tok/s in one step, %.2f tok/s one token per step (%.2fx)\n",
			p.Tokens, p.BatchedTokS, p.DecodePathTokS, p.Speedup)
		return err
	}
	return nil
}
