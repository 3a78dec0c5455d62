package node

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func ipNet(s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestParseAnnounce(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "ws://node.example.org:7001", want: "ws://node.example.org:7001/v1/inference"},
		{in: "wss://node.example.org", want: "wss://node.example.org/v1/inference"},
		{in: "ws://203.0.113.7:7001/custom", want: "ws://203.0.113.7:7001/custom"},
		{in: "http://node.example.org:7001", err: "want ws://HOST:PORT"},
		{in: "node.example.org:7001", err: "want ws://HOST:PORT"},
		{in: "ws://0.0.0.0:7001", err: "not an address clients can dial"},
		{in: "ws://[::]:7001", err: "not an address clients can dial"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAnnounce(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrBadConfig)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAdvertiseURL(t *testing.T) {
	lan := func() ([]net.Addr, error) {
		return []net.Addr{ipNet("127.0.0.1/8"), ipNet("::1/128"), ipNet("fe80::1/64"), ipNet("2001:db8::5/64"), ipNet("192.168.1.20/24")}, nil
	}
	v6only := func() ([]net.Addr, error) { return []net.Addr{ipNet("127.0.0.1/8"), ipNet("2001:db8::5/64")}, nil }
	loopOnly := func() ([]net.Addr, error) { return []net.Addr{ipNet("127.0.0.1/8"), ipNet("::1/128")}, nil }
	tests := []struct {
		name, announce, addr string
		moved                bool
		ifaces               func() ([]net.Addr, error)
		want, err            string
	}{
		{name: "specific address", addr: "127.0.0.1:7001", ifaces: loopOnly, want: "ws://127.0.0.1:7001/v1/inference"},
		{name: "announce wins", announce: "ws://node.example.org:7001/v1/inference", addr: "0.0.0.0:7001", ifaces: loopOnly,
			want: "ws://node.example.org:7001/v1/inference"},
		{name: "announce keeps its port (port forward)", announce: "ws://node.example.org:443/v1/inference", addr: "0.0.0.0:7001", ifaces: loopOnly,
			want: "ws://node.example.org:443/v1/inference"},
		{name: "moved listener: announce host, its port", announce: "ws://node.example.org:7001/v1/inference", addr: "0.0.0.0:40123", moved: true,
			ifaces: loopOnly, want: "ws://node.example.org:40123/v1/inference"},
		{name: "0.0.0.0: first IPv4 non-loopback", addr: "0.0.0.0:7001", ifaces: lan, want: "ws://192.168.1.20:7001/v1/inference"},
		{name: ":: with only IPv6", addr: "[::]:7001", ifaces: v6only, want: "ws://[2001:db8::5]:7001/v1/inference"},
		{name: "0.0.0.0 on a loopback-only machine", addr: "0.0.0.0:7001", ifaces: loopOnly, err: "pass --announce ws://HOST:7001"},
		{name: "interfaces fail", addr: "0.0.0.0:7001", ifaces: func() ([]net.Addr, error) { return nil, errors.New("boom") }, err: "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AdvertiseURL(tc.announce, tc.addr, tc.moved, tc.ifaces)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := AdvertiseURL("", "0.0.0.0:7001", false, loopOnly)
	require.ErrorIs(t, err, ErrNoAdvertiseAddr)
}
