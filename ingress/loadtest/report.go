package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Config is the load of one comparison.
type Config struct {
	// Concurrency is the number of concurrent requests of a round (>= 1).
	Concurrency int `json:"concurrency"`
	// Rounds is the number of rounds per phase (>= 1).
	Rounds int `json:"rounds"`
	// MaxTokens is the tokens each request generates (>= 1); the caller's
	// Requests generate them, Config only reports it.
	MaxTokens int `json:"max_tokens"`
}

// DefaultConfig returns 50 concurrent requests of 32 tokens, one round.
func DefaultConfig() Config { return Config{Concurrency: 50, Rounds: 1, MaxTokens: 32} }

// AddFlags registers the `swarm proxy bench` flags of c's fields on fs,
// with c's values as the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "concurrent streaming requests per round")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds of --concurrency requests per phase")
	fs.IntVar(&c.MaxTokens, "max-tokens", c.MaxTokens, "tokens generated per request (greedy)")
}

// Report compares a direct phase with one through a proxy; times are
// seconds.
type Report struct {
	Config
	Direct Phase `json:"direct"`
	Proxy  Phase `json:"proxy"`
	// AddedTTFTp50 and AddedTTFTp99 are the proxy's TTFT percentiles minus
	// the direct ones: what the proxy adds.
	AddedTTFTp50 float64 `json:"added_ttft_p50_seconds"`
	AddedTTFTp99 float64 `json:"added_ttft_p99_seconds"`
}

// Compare warms up with one call of direct and one of proxy (connections,
// measurement caches), then runs the "direct" phase and the "proxy" phase
// of c, one after the other.
func Compare(ctx context.Context, c Config, direct, proxy Request) Report {
	_ = direct(ctx)
	_ = proxy(ctx)
	r := Report{Config: c}
	r.Direct = RunPhase(ctx, "direct", c.Concurrency, c.Rounds, direct)
	r.Proxy = RunPhase(ctx, "proxy", c.Concurrency, c.Rounds, proxy)
	r.AddedTTFTp50 = r.Proxy.TTFTp50 - r.Direct.TTFTp50
	r.AddedTTFTp99 = r.Proxy.TTFTp99 - r.Direct.TTFTp99
	return r
}

// Failed counts the failed requests of both phases.
func (r Report) Failed() int { return r.Direct.Errors + r.Proxy.Errors }

// WriteJSON writes the report as indented JSON (times in seconds).
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a table in milliseconds, with each
// phase's first error.
func (r Report) WriteText(w io.Writer) error {
	ms := func(s float64) string { return fmt.Sprintf("%9.2fms", s*1000) }
	fmt.Fprintf(w, "%d concurrent streaming requests x %d rounds, %d tokens each\n", r.Concurrency, r.Rounds, r.MaxTokens)
	fmt.Fprintf(w, "%-8s %8s %7s %11s %11s %11s %9s\n", "phase", "requests", "errors", "TTFT p50", "TTFT p99", "TPOT mean", "wall")
	for _, p := range []Phase{r.Direct, r.Proxy} {
		fmt.Fprintf(w, "%-8s %8d %7d %11s %11s %11s %8.2fs\n", p.Name, p.Requests, p.Errors, ms(p.TTFTp50), ms(p.TTFTp99), ms(p.TPOT), p.Wall)
	}
	fmt.Fprintf(w, "added by the proxy: TTFT p50 %s, p99 %s\n", ms(r.AddedTTFTp50), ms(r.AddedTTFTp99))
	for _, p := range []Phase{r.Direct, r.Proxy} {
		if p.FirstErr != "" {
			if _, err := fmt.Fprintf(w, "%s: first error: %s\n", p.Name, p.FirstErr); err != nil {
				return err
			}
		}
	}
	return nil
}
