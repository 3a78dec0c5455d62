package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints results as a table in the layout of paper 003 Table 4
// with the breakdown of Tables C.7/C.8 as extra columns: seconds per token
// over all tokens, for the first token (waiting included), per remaining
// token, mean waiting, the largest number of concurrent sessions, R, hops
// per chain, retries per session, blocks per server by kind and the wall
// time of placement + routing per run, with the 95% confidence half-width
// of the per-token mean. When both "proposed" and "petals" are present it
// adds their ratios and the gain's decomposition (Decompose) for
// sessions of outputTokens = l_max tokens. Failed runs are listed under
// the table.
func WriteTable(w io.Writer, results []Result, outputTokens int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algorithm\tper-token (s)\t± 95%\tfirst token (s)\tremaining (s)\twaiting (s)\tmax conc.\tR\thops\tretries\tblocks/server\truntime (ms)\truns\t")
	for _, r := range results {
		if r.Runs == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t0\t\n", r.Algorithm)
			continue
		}
		rs := "-"
		if r.R > 0 {
			rs = fmt.Sprintf("%.1f", r.R)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%.3f\t%.2f\t%.1f\t%s\t%.2f\t%.2f\t%s\t%.2f\t%d\t\n",
			r.Algorithm, r.PerToken, r.PerTokenCI, r.FirstToken, r.RemainingToken, r.Waiting, r.MaxConcurrency,
			rs, r.Hops, r.Retries, blocksText(r.Blocks), r.Runtime*1e3, r.Runs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Algorithm == "proposed" && r.Runs > 0 && r.UpperBound > 0 {
			fmt.Fprintf(w, "proposed: decode per-token bounds for R concurrent sessions: lower (B.8) %.3f s, upper (17) %.3f s; achieved remaining-token time %.3f s\n",
				r.LowerBound, r.UpperBound, r.RemainingToken)
			if r.SessionBound > 0 {
				fmt.Fprintf(w, "proposed: exact single-session lower bound (full RTT per hop, any placement) %.3f s\n", r.SessionBound)
			}
		}
	}
	for _, r := range results {
		if r.Runs > 0 && r.MovedBytes > 0 {
			fmt.Fprintf(w, "%s: replanning loads %.2f GB of weights in %.1f steps per run (mean)\n", r.Algorithm, r.MovedBytes/1e9, r.MoveSteps)
		}
		if r.Runs > 0 && r.MoveTime > 0 {
			fmt.Fprintf(w, "%s: the moves take %.1f s (mean); per-token %.3f s for sessions arriving before, %.3f s after\n",
				r.Algorithm, r.MoveTime, r.PerTokenBeforeMove, r.PerTokenAfterMove)
		}
	}
	if p, q, ok := pair(results, "proposed", "live-replan"); ok {
		fmt.Fprintf(w, "live-replan / proposed: per-token %.3f\n", q.PerToken/p.PerToken)
	}
	if p, q, ok := pair(results, "proposed", "petals"); ok {
		fmt.Fprintf(w, "proposed / petals: per-token %.3f, first token %.3f, remaining %.3f\n",
			p.PerToken/q.PerToken, p.FirstToken/q.FirstToken, p.RemainingToken/q.RemainingToken)
		if d, ok := Decompose(p, q, outputTokens); ok {
			fmt.Fprintf(w, "gain of proposed over petals: %.3f s per token, %.0f%% from the first token, %.0f%% from the remaining tokens\n",
				d.Gain, 100*d.FirstShare, 100*d.RemainingShare)
		}
	}
	for _, r := range results {
		if len(r.Errors) > 0 {
			fmt.Fprintf(w, "%s failed in %d run(s): %s\n", r.Algorithm, len(r.Errors), r.Errors[0])
		}
	}
	return nil
}

// WritePaper prints the paper's numbers for the same setting, experiment
// and (MATLAB), next to ours.
func WritePaper(w io.Writer, source string, petals, proposed PaperCell) {
	fmt.Fprintf(w, "paper 003 %s, experiment (MATLAB), seconds:\n", source)
	for _, c := range []struct {
		name string
		cell PaperCell
	}{{"petals", petals}, {"proposed", proposed}} {
		fmt.Fprintf(w, "  %-9s per-token %.2f (%.2f)  first token %.2f (%.2f)  remaining %.2f (%.2f)\n", c.name,
			c.cell.PerToken.Experiment, c.cell.PerToken.MATLAB,
			c.cell.FirstToken.Experiment, c.cell.FirstToken.MATLAB,
			c.cell.RemainingToken.Experiment, c.cell.RemainingToken.MATLAB)
	}
	fmt.Fprintf(w, "  proposed / petals per-token: %.3f (%.3f)\n",
		proposed.PerToken.Experiment/petals.PerToken.Experiment, proposed.PerToken.MATLAB/petals.PerToken.MATLAB)
}

func pair(results []Result, a, b string) (Result, Result, bool) {
	i := slices.IndexFunc(results, func(r Result) bool { return r.Algorithm == a })
	j := slices.IndexFunc(results, func(r Result) bool { return r.Algorithm == b })
	if i < 0 || j < 0 || results[i].Runs == 0 || results[j].Runs == 0 {
		return Result{}, Result{}, false
	}
	return results[i], results[j], true
}

func blocksText(b map[string]float64) string {
	kinds := make([]string, 0, len(b))
	for k := range b {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.1f", k, b[k])
	}
	return strings.Join(parts, ", ")
}

// Decomposition splits the per-token gain of one algorithm over another
// into its first-token and remaining-token parts. A session's time per
// token is (first token + (l_max - 1) * remaining) / l_max, so
//
//	gain = (FT_b - FT_a) / l_max + (l_max - 1) (RT_b - RT_a) / l_max
//
// and FirstShare + RemainingShare = 1 (either may be negative when that
// part goes the other way).
type Decomposition struct {
	// Gain is PerToken_b - PerToken_a in seconds per token.
	Gain float64 `json:"gain"`
	// FirstShare and RemainingShare are the fractions of Gain from the
	// first-token and the remaining-token times.
	FirstShare     float64 `json:"first_token_share"`
	RemainingShare float64 `json:"remaining_token_share"`
}

// Decompose returns the decomposition of the gain of a over b for sessions
// of outputTokens tokens; false when the gain is 0 or either failed.
func Decompose(a, b Result, outputTokens int) (Decomposition, bool) {
	if a.Runs == 0 || b.Runs == 0 || outputTokens < 1 {
		return Decomposition{}, false
	}
	l := float64(outputTokens)
	first := (b.FirstToken - a.FirstToken) / l
	rest := (l - 1) * (b.RemainingToken - a.RemainingToken) / l
	gain := first + rest
	if gain == 0 {
		return Decomposition{}, false
	}
	return Decomposition{Gain: gain, FirstShare: first / gain, RemainingShare: rest / gain}, true
}
