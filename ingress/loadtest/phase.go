package loadtest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Sample is one request's outcome.
type Sample struct {
	// TTFT is the time from the start of the request to its first token;
	// Total to its end.
	TTFT, Total time.Duration
	// Tokens counts the tokens received.
	Tokens int
	// Text is the generated text, when the Request collects it
	// (Completions does).
	Text string
	// Err is why the request failed (nil when it did not).
	Err error
}

// Request runs one streaming generation and measures it.
type Request func(ctx context.Context) Sample

// Phase summarizes the samples of one phase; times are seconds.
type Phase struct {
	// Name names the phase ("direct", "proxy").
	Name string `json:"name"`
	// Requests counts the requests and Errors the failed ones.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// Tokens counts the tokens of the requests that worked.
	Tokens int `json:"tokens"`
	// TTFTp50 and TTFTp99 are nearest-rank percentiles of the TTFTs of the
	// requests that worked (0 when none did).
	TTFTp50 float64 `json:"ttft_p50_seconds"`
	TTFTp99 float64 `json:"ttft_p99_seconds"`
	// TPOT is the mean over requests of more than one token of
	// (Total - TTFT) / (Tokens - 1).
	TPOT float64 `json:"tpot_mean_seconds"`
	// Wall is the phase's wall time.
	Wall float64 `json:"wall_seconds"`
	// FirstErr is the first failure's text, if any.
	FirstErr string `json:"first_error,omitempty"`
}

// RunPhase runs rounds rounds of concurrency concurrent calls of req, one
// round after the other, and summarizes them. It returns when every call
// has returned; ctx is handed to each call.
func RunPhase(ctx context.Context, name string, concurrency, rounds int, req Request) Phase {
	var all []Sample
	start := time.Now()
	for range rounds {
		got := make([]Sample, concurrency)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i] = req(ctx) })
		}
		wg.Wait()
		all = append(all, got...)
	}
	return Summarize(name, all, time.Since(start))
}

// Summarize summarizes samples taken over wall time.
func Summarize(name string, samples []Sample, wall time.Duration) Phase {
	p := Phase{Name: name, Wall: wall.Seconds()}
	var ttfts []float64
	var tpotSum float64
	tpotN := 0
	for _, s := range samples {
		p.Requests++
		if s.Err != nil {
			p.Errors++
			if p.FirstErr == "" {
				p.FirstErr = s.Err.Error()
			}
			continue
		}
		p.Tokens += s.Tokens
		ttfts = append(ttfts, s.TTFT.Seconds())
		if s.Tokens > 1 {
			tpotSum += (s.Total - s.TTFT).Seconds() / float64(s.Tokens-1)
			tpotN++
		}
	}
	slices.Sort(ttfts)
	p.TTFTp50, p.TTFTp99 = Percentile(ttfts, 0.50), Percentile(ttfts, 0.99)
	if tpotN > 0 {
		p.TPOT = tpotSum / float64(tpotN)
	}
	return p
}

// Percentile returns the nearest-rank percentile q (in [0, 1]) of sorted
// values: the value at rank ceil(q n), clamped to [1, n]; 0 for none.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
