package p2p

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

const testPeer = "12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA"

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{name: "defaults", mod: func(*Config) {}},
		{name: "tcp and quic", mod: func(c *Config) {
			c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
		}},
		{name: "bootstrap", mod: func(c *Config) {
			c.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001/p2p/" + testPeer, "/ip4/127.0.0.1/udp/4001/quic-v1/p2p/" + testPeer}
		}},
		{name: "swarm key tcp only", mod: func(c *Config) {
			c.SwarmKeyFile = "swarm.key"
			c.ListenAddrs = []string{"/ip4/0.0.0.0/tcp/0"}
		}},
		{name: "client mode", mod: func(c *Config) { c.DHTMode = DHTModeClient }},
		{name: "auto mode", mod: func(c *Config) { c.DHTMode = DHTModeAuto }},
		{name: "listen not a multiaddr", mod: func(c *Config) { c.ListenAddrs = []string{"0.0.0.0:4001"} }, wantErr: "not a multiaddr"},
		{name: "listen no transport", mod: func(c *Config) { c.ListenAddrs = []string{"/ip4/0.0.0.0/udp/4001"} }, wantErr: "neither tcp nor quic-v1"},
		{name: "quic with swarm key", mod: func(c *Config) {
			c.SwarmKeyFile = "swarm.key"
			c.ListenAddrs = []string{"/ip4/0.0.0.0/udp/0/quic-v1"}
		}, wantErr: "QUIC"},
		{name: "bootstrap without peer id", mod: func(c *Config) { c.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001"} }, wantErr: "/p2p/PEERID"},
		{name: "bootstrap garbage", mod: func(c *Config) { c.Bootstrap = []string{"localhost:4001"} }, wantErr: "not a multiaddr"},
		{name: "bad dht mode", mod: func(c *Config) { c.DHTMode = "fast" }, wantErr: "--dht-mode"},
		{name: "empty dht mode", mod: func(c *Config) { c.DHTMode = "" }, wantErr: "--dht-mode"},
		{name: "relay with larger limits", mod: func(c *Config) {
			c.RelayService, c.RelayMaxBytes, c.RelayMaxDuration = true, 64<<20, time.Hour
		}},
		{name: "relay without byte limit", mod: func(c *Config) { c.RelayService, c.RelayMaxBytes = true, 0 }, wantErr: "--relay-max-bytes 0"},
		{name: "relay without time limit", mod: func(c *Config) { c.RelayService, c.RelayMaxDuration = true, 0 }, wantErr: "--relay-max-duration 0s"},
		{name: "limits ignored without relay", mod: func(c *Config) { c.RelayMaxBytes = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBadConfig)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestConfigDefaultListenDropsQUICWithSwarmKey(t *testing.T) {
	c := DefaultConfig()
	addrs, err := c.listenMultiaddrs()
	require.NoError(t, err)
	require.Len(t, addrs, len(DefaultListenAddrs))
	c.SwarmKeyFile = "swarm.key"
	addrs, err = c.listenMultiaddrs()
	require.NoError(t, err)
	require.Len(t, addrs, 2)
	for _, a := range addrs {
		require.NotContains(t, a.String(), "quic")
	}
}

func TestConfigAddFlags(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.AddFlags(fs)
	for _, name := range []string{"p2p-listen", "identity", "bootstrap", "swarm-key", "dht-mode", "relay-service", "relay-max-bytes", "relay-max-duration", "nat-portmap"} {
		f := fs.Lookup(name)
		require.NotNil(t, f, name)
		require.NotEmpty(t, f.Usage, name)
	}
	require.NoError(t, fs.Parse([]string{
		"--p2p-listen", "/ip4/127.0.0.1/tcp/1", "--p2p-listen", "/ip4/127.0.0.1/udp/1/quic-v1",
		"--bootstrap", "/ip4/127.0.0.1/tcp/4001/p2p/" + testPeer,
		"--identity", "id.key", "--swarm-key", "s.key", "--dht-mode", "client", "--relay-service", "--nat-portmap",
		"--relay-max-bytes", "1048576", "--relay-max-duration", "10m",
	}))
	require.Equal(t, Config{
		ListenAddrs:      []string{"/ip4/127.0.0.1/tcp/1", "/ip4/127.0.0.1/udp/1/quic-v1"},
		IdentityFile:     "id.key",
		Bootstrap:        []string{"/ip4/127.0.0.1/tcp/4001/p2p/" + testPeer},
		SwarmKeyFile:     "s.key",
		DHTMode:          DHTModeClient,
		RelayService:     true,
		RelayMaxBytes:    1 << 20,
		RelayMaxDuration: 10 * time.Minute,
		NATPortMap:       true,
	}, c)
}

func TestBootstrapPeersMergesAddressesOfOnePeer(t *testing.T) {
	c := DefaultConfig()
	c.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001/p2p/" + testPeer, "/ip4/127.0.0.1/udp/4001/quic-v1/p2p/" + testPeer}
	infos, err := c.BootstrapPeers()
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, testPeer, infos[0].ID.String())
	require.Len(t, infos[0].Addrs, 2)
}
