package cliconf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// testCmd is a root with a persistent --config and a serve-like
// subcommand with a string, a list, a bool, a size and a duration flag,
// and a second subcommand with a flag of its own.
type testCmd struct {
	root, serve    *cobra.Command
	config, listen string
	bootstrap      []string
	relay          bool
	memory         int64
	other          string
}

func newTestCmd() *testCmd {
	t := &testCmd{}
	t.root = &cobra.Command{Use: "swarm"}
	t.root.PersistentFlags().StringVar(&t.config, ConfigFlag, "", "config file")
	t.serve = &cobra.Command{Use: "serve", RunE: func(*cobra.Command, []string) error { return nil }}
	f := t.serve.Flags()
	f.StringVar(&t.listen, "listen", "127.0.0.1:0", "")
	f.StringSliceVar(&t.bootstrap, "bootstrap", nil, "")
	f.BoolVar(&t.relay, "relay-service", false, "")
	f.Var(NewBytes(&t.memory), "memory", "")
	other := &cobra.Command{Use: "status"}
	other.Flags().StringVar(&t.other, "proxy-url", "", "")
	t.root.AddCommand(t.serve, other)
	return t
}

// run parses args for serve and applies env and file as Apply would from
// a PersistentPreRunE.
func (t *testCmd) run(args []string, env map[string]string) error {
	t.root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		file := t.config
		if file == "" {
			file = env["SWARM_CONFIG"]
		}
		return Apply(cmd, file, func(k string) string { return env[k] })
	}
	t.root.SetArgs(append([]string{"serve"}, args...))
	return t.root.Execute()
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "swarm.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestEnvName(t *testing.T) {
	require.Equal(t, "SWARM_BOOTSTRAP", EnvName("bootstrap"))
	require.Equal(t, "SWARM_P2P_LISTEN", EnvName("p2p-listen"))
}

func TestApply_Precedence(t *testing.T) {
	file := `listen: 0.0.0.0:7001
bootstrap:
  - /ip4/10.0.0.1/tcp/4001/p2p/A
  - /ip4/10.0.0.2/tcp/4001/p2p/B
relay-service: true
memory: 8GiB
proxy-url: http://x
`
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		listen    string
		bootstrap []string
		relay     bool
		memory    int64
		changed   bool // serve's --listen counts as given
	}{
		{name: "defaults", listen: "127.0.0.1:0"},
		{name: "env only", env: map[string]string{"SWARM_LISTEN": "0.0.0.0:9", "SWARM_BOOTSTRAP": "/a/p2p/X, /b/p2p/Y", "SWARM_MEMORY": "500MB", "SWARM_RELAY_SERVICE": "true"},
			listen: "0.0.0.0:9", bootstrap: []string{"/a/p2p/X", "/b/p2p/Y"}, relay: true, memory: 500_000_000, changed: true},
		{name: "file via --config", args: []string{"--config", "FILE"},
			listen: "0.0.0.0:7001", bootstrap: []string{"/ip4/10.0.0.1/tcp/4001/p2p/A", "/ip4/10.0.0.2/tcp/4001/p2p/B"}, relay: true, memory: 8 << 30, changed: true},
		{name: "file via SWARM_CONFIG", env: map[string]string{"SWARM_CONFIG": "FILE"},
			listen: "0.0.0.0:7001", bootstrap: []string{"/ip4/10.0.0.1/tcp/4001/p2p/A", "/ip4/10.0.0.2/tcp/4001/p2p/B"}, relay: true, memory: 8 << 30, changed: true},
		{name: "env beats file, flag beats env", args: []string{"--config", "FILE", "--listen", "10.1.1.1:1"},
			env:    map[string]string{"SWARM_LISTEN": "0.0.0.0:9", "SWARM_BOOTSTRAP": "/c/p2p/Z"},
			listen: "10.1.1.1:1", bootstrap: []string{"/c/p2p/Z"}, relay: true, memory: 8 << 30, changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, file)
			for i, a := range tc.args {
				if a == "FILE" {
					tc.args[i] = path
				}
			}
			for k, v := range tc.env {
				if v == "FILE" {
					tc.env[k] = path
				}
			}
			c := newTestCmd()
			require.NoError(t, c.run(tc.args, tc.env))
			require.Equal(t, tc.listen, c.listen)
			require.Equal(t, tc.bootstrap, c.bootstrap)
			require.Equal(t, tc.relay, c.relay)
			require.Equal(t, tc.memory, c.memory)
			require.Equal(t, tc.changed, c.serve.Flags().Changed("listen"))
			require.Empty(t, c.other, "another command's key is accepted but does not touch this one")
		})
	}
}

func TestApply_Errors(t *testing.T) {
	tests := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{name: "unknown key", file: "listn: 0.0.0.0:1\n", want: `key "listn" is not a flag`},
		{name: "not a mapping", file: "- a\n- b\n", want: "want a YAML mapping"},
		{name: "bad size in file", file: "memory: lots\n", want: "memory"},
		{name: "list for a single flag", file: "listen: [a, b]\n", want: "2 values for a flag that takes one"},
		{name: "bad bool in env", env: map[string]string{"SWARM_RELAY_SERVICE": "maybe"}, want: "$SWARM_RELAY_SERVICE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCmd()
			var args []string
			if tc.file != "" {
				args = []string{"--config", writeFile(t, tc.file)}
			}
			err := c.run(args, tc.env)
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
	c := newTestCmd()
	require.ErrorContains(t, c.run([]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, nil), "no such file")
}

func TestBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{in: "8GiB", want: 8 * 1024 * 1024 * 1024},
		{in: "500MB", want: 500 * 1000 * 1000},
		{in: "1.5 GB", want: 1_500_000_000},
		{in: "2000000", want: 2_000_000},
		{in: "900k", want: 900_000},
		{in: "0", want: 0},
		{in: "lots", err: true},
		{in: "-5", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var n int64
			err := NewBytes(&n).Set(tc.in)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
}

func TestHumanBytes(t *testing.T) {
	require.Equal(t, "0 B", HumanBytes(0))
	require.Equal(t, "512 B", HumanBytes(512))
	require.Equal(t, "1.5 KiB", HumanBytes(1536))
	require.Equal(t, "8.0 GiB", HumanBytes(8<<30))
	require.Equal(t, "-2.0 MiB", HumanBytes(-2<<20))
}
