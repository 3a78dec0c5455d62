package node

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/swarmllm/swarm/api"
)

// ErrNoAdvertiseAddr is returned (wrapped) when a websocket listens on an
// unspecified address (0.0.0.0 or ::), no --announce URL is given, and the
// machine has no non-loopback interface address to advertise instead.
var ErrNoAdvertiseAddr = errors.New("node: no address to advertise")

// ParseAnnounce checks an --announce value: a websocket URL
// ws://HOST[:PORT] or wss://HOST[:PORT], with an optional path (default
// api.InferencePath). It returns the URL to advertise, with the path set.
// Errors wrap ErrBadConfig.
func ParseAnnounce(announce string) (string, error) {
	u, err := url.Parse(announce)
	if err != nil {
		return "", fmt.Errorf("%w: --announce %q: %w; want ws://HOST:PORT", ErrBadConfig, announce, err)
	}
	if (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%w: --announce %q: want ws://HOST:PORT or wss://HOST:PORT (the address clients dial)", ErrBadConfig, announce)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("%w: --announce %q: %s is not an address clients can dial; give this machine's public name or address", ErrBadConfig, announce, u.Hostname())
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = api.InferencePath
	}
	return u.String(), nil
}

// AdvertiseURL returns the websocket URL to advertise for a listener bound
// to addr (HOST:PORT as net.Listener.Addr gives it):
//
//   - announce (a ParseAnnounce result) when not empty; when its port
//     differs from addr's and moved is true (a second listener opened for
//     a span move on any port), announce's host with addr's port;
//   - ws://addr/v1/inference when addr's host is a specific address;
//   - for an unspecified host (0.0.0.0, ::), the first non-loopback
//     address that ifaceAddrs lists (IPv4 first): advertising 0.0.0.0
//     would send clients to their own machine. With none, an error
//     wrapping ErrNoAdvertiseAddr telling to pass --announce.
//
// ifaceAddrs is net.InterfaceAddrs outside tests.
func AdvertiseURL(announce, addr string, moved bool, ifaceAddrs func() ([]net.Addr, error)) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("node: advertise %q: %w", addr, err)
	}
	if announce != "" {
		u, err := url.Parse(announce)
		if err != nil {
			return "", fmt.Errorf("%w: --announce %q: %w", ErrBadConfig, announce, err)
		}
		if moved && u.Port() != port {
			u.Host = net.JoinHostPort(u.Hostname(), port)
		}
		return u.String(), nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return "ws://" + net.JoinHostPort(host, port) + api.InferencePath, nil
	}
	addrs, err := ifaceAddrs()
	if err != nil {
		return "", fmt.Errorf("node: list the interface addresses to advertise for %s: %w; pass --announce ws://HOST:%s", addr, err, port)
	}
	var v6 net.IP
	for _, a := range addrs {
		var cand net.IP
		switch a := a.(type) {
		case *net.IPNet:
			cand = a.IP
		case *net.IPAddr:
			cand = a.IP
		}
		if cand == nil || cand.IsLoopback() || cand.IsUnspecified() || cand.IsLinkLocalUnicast() || cand.IsMulticast() {
			continue
		}
		if cand.To4() != nil {
			return "ws://" + net.JoinHostPort(cand.String(), port) + api.InferencePath, nil
		}
		if v6 == nil {
			v6 = cand
		}
	}
	if v6 != nil {
		return "ws://" + net.JoinHostPort(v6.String(), port) + api.InferencePath, nil
	}
	return "", fmt.Errorf("%w: --listen %s listens on every interface but this machine has only loopback addresses; "+
		"pass --announce ws://HOST:%s with the name or address clients reach it at", ErrNoAdvertiseAddr, addr, port)
}
