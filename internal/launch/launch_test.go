package launch_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/launch"
)

// TestParseServeReady reads the two lines `swarm serve` prints and names
// what is wrong with other lines.
func TestParseServeReady(t *testing.T) {
	url, span, addrs, err := launch.ParseServeReady([]string{
		launch.ServeReadyPrefix + "ws://127.0.0.1:4001/v1/inference",
		launch.ServeRegistryPrefix + `{"id":"12D3KooW","blocks":"2:4","addrs":["/ip4/127.0.0.1/tcp/4002/p2p/12D3KooW"]}`,
	})
	require.NoError(t, err)
	require.Equal(t, "ws://127.0.0.1:4001/v1/inference", url)
	require.Equal(t, "2:4", span)
	require.Equal(t, []string{"/ip4/127.0.0.1/tcp/4002/p2p/12D3KooW"}, addrs)

	for name, lines := range map[string][]string{
		"one line":        {launch.ServeReadyPrefix + "ws://x"},
		"no URL":          {launch.ServeReadyPrefix, launch.ServeRegistryPrefix + `{"blocks":"0:1","addrs":["a"]}`},
		"other line":      {"hello", launch.ServeRegistryPrefix + `{"blocks":"0:1","addrs":["a"]}`},
		"bad JSON":        {launch.ServeReadyPrefix + "ws://x", launch.ServeRegistryPrefix + `{"blocks":`},
		"no addresses":    {launch.ServeReadyPrefix + "ws://x", launch.ServeRegistryPrefix + `{"blocks":"0:1"}`},
		"registry absent": {launch.ServeReadyPrefix + "ws://x", "swarm serve: something else"},
	} {
		_, _, _, err := launch.ParseServeReady(lines)
		require.ErrorContains(t, err, "want", name)
	}
}

// TestServeArgs: the command line carries every field, the bootstrap
// peers comma-joined, and no --bootstrap for the first server.
func TestServeArgs(t *testing.T) {
	s := launch.Serve{Model: "/m.bin", Tokenizer: "/t.bin", Memory: 1000, TargetSessions: 2, MaxLength: 512, Extra: []string{"--x"}}
	require.NotContains(t, s.Args(), "--bootstrap")
	s.Bootstrap = []string{"/a", "/b"}
	args := s.Args()
	require.Equal(t, []string{"serve", "--model", "/m.bin", "--tokenizer", "/t.bin", "--blocks", "auto", "--memory", "1000",
		"--target-sessions", "2", "--max-length", "512"}, args[:13])
	require.Contains(t, args, "/a,/b")
	require.Equal(t, "--x", args[len(args)-1])
}
