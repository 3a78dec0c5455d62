package loadtest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/loadtest"
)

func TestCompare(t *testing.T) {
	sample := func(ttft time.Duration) loadtest.Request {
		return func(context.Context) loadtest.Sample {
			return loadtest.Sample{TTFT: ttft, Total: ttft + 10*time.Millisecond, Tokens: 2}
		}
	}
	c := loadtest.Config{Concurrency: 2, Rounds: 3, MaxTokens: 2}
	r := loadtest.Compare(context.Background(), c, sample(10*time.Millisecond), sample(25*time.Millisecond))
	require.Equal(t, c, r.Config)
	require.Equal(t, 6, r.Direct.Requests, "the warm-up calls are not counted")
	require.Equal(t, "direct", r.Direct.Name)
	require.Equal(t, "proxy", r.Proxy.Name)
	require.InDelta(t, 0.015, r.AddedTTFTp50, 1e-12)
	require.InDelta(t, 0.015, r.AddedTTFTp99, 1e-12)
	require.Zero(t, r.Failed())
}

// TestReportOutputs pins the table and the JSON field names of `swarm
// proxy bench`, which scripts read.
func TestReportOutputs(t *testing.T) {
	r := loadtest.Report{
		Config:       loadtest.Config{Concurrency: 50, Rounds: 1, MaxTokens: 32},
		Direct:       loadtest.Phase{Name: "direct", Requests: 50, Tokens: 1600, TTFTp50: 0.0123, TTFTp99: 0.0456, TPOT: 0.002, Wall: 1.5},
		Proxy:        loadtest.Phase{Name: "proxy", Requests: 50, Errors: 2, Tokens: 1536, TTFTp50: 0.0150, TTFTp99: 0.0601, TPOT: 0.0021, Wall: 1.75, FirstErr: "HTTP 503"},
		AddedTTFTp50: 0.0027,
		AddedTTFTp99: 0.0145,
	}
	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	require.Equal(t, `50 concurrent streaming requests x 1 rounds, 32 tokens each
phase    requests  errors    TTFT p50    TTFT p99   TPOT mean      wall
direct         50       0     12.30ms     45.60ms      2.00ms     1.50s
proxy          50       2     15.00ms     60.10ms      2.10ms     1.75s
added by the proxy: TTFT p50      2.70ms, p99     14.50ms
proxy: first error: HTTP 503
`, b.String())
	require.Equal(t, 2, r.Failed())

	b.Reset()
	require.NoError(t, r.WriteJSON(&b))
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(b.String()), &fields))
	require.ElementsMatch(t, []string{"concurrency", "rounds", "max_tokens", "direct", "proxy", "added_ttft_p50_seconds", "added_ttft_p99_seconds"}, keys(fields))
	var phase map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(fields["proxy"], &phase))
	require.ElementsMatch(t, []string{"name", "requests", "errors", "tokens", "ttft_p50_seconds", "ttft_p99_seconds", "tpot_mean_seconds", "wall_seconds", "first_error"}, keys(phase))
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestConfigFlags(t *testing.T) {
	c := loadtest.DefaultConfig()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	c.AddFlags(fs)
	require.Equal(t, "50", fs.Lookup("concurrency").DefValue)
	require.Equal(t, "1", fs.Lookup("rounds").DefValue)
	require.Equal(t, "32", fs.Lookup("max-tokens").DefValue)
	require.NoError(t, fs.Parse([]string{"--concurrency", "4", "--rounds", "2", "--max-tokens", "8"}))
	require.Equal(t, loadtest.Config{Concurrency: 4, Rounds: 2, MaxTokens: 8}, c)
}
