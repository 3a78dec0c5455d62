package convergence

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestParseSizes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
		err  string
	}{
		{"16,32,64", []int{16, 32, 64}, ""},
		{" 2 , 3", []int{2, 3}, ""},
		{"5", []int{5}, ""},
		{"1", nil, `"1" is not a swarm size >= 2`},
		{"a,3", nil, `"a" is not a swarm size >= 2`},
		{"4,,8", nil, `"" is not a swarm size >= 2`},
		{"", nil, `"" is not a swarm size >= 2`},
	} {
		got, err := ParseSizes(tt.in)
		if tt.err != "" {
			require.EqualError(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

// TestTable pins the table layout of `swarm registry bench`.
func TestTable(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteTableHeader(&b, "quic"))
	require.NoError(t, WriteTableRow(&b, Result{
		Nodes: 16, Trials: make([]Trial, 5), Missing: 1,
		P50: 7123456 * time.Nanosecond, P95: 13 * time.Millisecond, P100: 1234567890 * time.Nanosecond,
		Setup: 2345678901 * time.Nanosecond, Settled: 7 * time.Second,
	}))
	require.Equal(t, fmt.Sprintf("registry convergence on loopback (quic), all nodes in one process; %d CPUs, GOMAXPROCS %d\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))+
		" NODES  TRIALS          P50          P95         P100  MISSING      SETUP    SETTLED\n"+
		"    16       5       7.12ms         13ms     1.23457s        1     2.346s         7s\n", b.String())
}

func TestReportJSON(t *testing.T) {
	var js strings.Builder
	require.NoError(t, NewReport("tcp", []Result{{Nodes: 2, P50: time.Millisecond}}).WriteJSON(&js))
	require.JSONEq(t, fmt.Sprintf(`{"cpus": %d, "gomaxprocs": %d, "transport": "tcp", "results": [
		{"nodes": 2, "setup_ns": 0, "settled_ns": 0, "trials": null, "p50_ns": 1000000, "p95_ns": 0, "p100_ns": 0, "missing": 0}]}`,
		runtime.NumCPU(), runtime.GOMAXPROCS(0)), js.String())
}

func TestForSizes(t *testing.T) {
	p := DefaultParams()
	p.Trials = 3
	ps, err := p.ForSizes([]int{4, 8})
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, 4, ps[0].Nodes)
	require.Equal(t, 8, ps[1].Nodes)
	require.Equal(t, 3, ps[1].Trials)
	_, err = p.ForSizes([]int{8, 3})
	require.ErrorIs(t, err, ErrBadParams)
	require.ErrorContains(t, err, "trials = 3, want 1..nodes-1 = 2")
}

func TestAddFlags(t *testing.T) {
	p := DefaultParams()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	p.AddFlags(fs)
	require.Equal(t, "1m0s", fs.Lookup("timeout").DefValue)
	require.NoError(t, fs.Parse([]string{"--trials", "2", "--transport", "quic", "--timeout", "3s", "--settle", "0", "--heartbeat-interval", "2s"}))
	require.Equal(t, 2, p.Trials)
	require.Equal(t, "quic", p.Transport)
	require.Equal(t, 3*time.Second, p.Timeout)
	require.Zero(t, p.Settle)
	require.Equal(t, 2*time.Second, p.Registry.HeartbeatInterval)
}
