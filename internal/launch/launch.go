// Package launch starts `swarm serve` and `swarm proxy` processes of this
// binary on loopback and reads what they print once ready: the shared
// process side of `swarm demo` and `swarm bench churn`. It owns the ready
// lines' prefixes, so the commands that print them and the parents that
// parse them agree.
//
// This package must never import any package of this repository but
// internal/supervise: it knows command lines and ready lines, not swarm.
package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/swarmllm/swarm/internal/supervise"
)

// ServeReadyPrefix starts the line `swarm serve` prints on stdout once it
// accepts sessions; scripts, tests and parents parse the URL after it.
const ServeReadyPrefix = "swarm serve: listening on "

// ServeRegistryPrefix starts the second stdout line of a server in the
// swarm: a JSON object with its peer id, span and libp2p addresses.
const ServeRegistryPrefix = "swarm serve: registry "

// ProxyReadyPrefix starts the line `swarm proxy` prints on stdout once it
// listens; the URL of its HTTP API follows.
const ProxyReadyPrefix = "swarm proxy: listening on "

// Serve is a `swarm serve --blocks auto` process on loopback.
type Serve struct {
	// Model and Tokenizer are the model's files (absolute paths).
	Model, Tokenizer string
	// Memory is the server's M_j, bytes (--memory).
	Memory int64
	// TargetSessions is R and MaxLength the session length (tokens) the
	// placement guarantees room for (--target-sessions, --max-length).
	TargetSessions, MaxLength int
	// Bootstrap are the multiaddrs of peers to join through; none makes
	// the server the swarm's first node.
	Bootstrap []string
	// JoinSettle is --join-settle; DrainTimeout is --drain-timeout.
	JoinSettle, DrainTimeout time.Duration
	// Extra are more flags, appended as given.
	Extra []string
}

// Args returns the command line of s after the executable.
func (s Serve) Args() []string {
	args := []string{"serve", "--model", s.Model, "--tokenizer", s.Tokenizer, "--blocks", "auto",
		"--memory", fmt.Sprint(s.Memory), "--target-sessions", fmt.Sprint(s.TargetSessions), "--max-length", fmt.Sprint(s.MaxLength),
		"--join-settle", s.JoinSettle.String(), "--listen", "127.0.0.1:0", "--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--log-level", "warn", "--drain-timeout", s.DrainTimeout.String()}
	if len(s.Bootstrap) > 0 {
		args = append(args, "--bootstrap", strings.Join(s.Bootstrap, ","))
	}
	return append(args, s.Extra...)
}

// Server is a started server.
type Server struct {
	// Child is its process.
	Child *supervise.Child
	// URL is its websocket URL; Span its blocks ("2:4"); Addrs its libp2p
	// multiaddrs.
	URL, Span string
	Addrs     []string
}

// Start starts s as a child of g (exe is this binary) and waits up to
// timeout for its two ready lines.
func (s Serve) Start(ctx context.Context, g *supervise.Group, timeout time.Duration, exe string) (Server, error) {
	c, err := g.Start(ctx, timeout, 2, exe, s.Args()...)
	if err != nil {
		return Server{}, err
	}
	url, span, addrs, err := ParseServeReady(c.Ready)
	if err != nil {
		return Server{}, fmt.Errorf("server %d: %w", c.Cmd.Process.Pid, err)
	}
	return Server{Child: c, URL: url, Span: span, Addrs: addrs}, nil
}

// ParseServeReady reads the two ready lines `swarm serve` prints: its URL,
// then its registry line (a JSON object with its blocks and addresses).
func ParseServeReady(lines []string) (url, span string, addrs []string, err error) {
	if len(lines) < 2 {
		return "", "", nil, fmt.Errorf("printed %d ready lines, want 2 (%q, then %q)", len(lines), ServeReadyPrefix, ServeRegistryPrefix)
	}
	url = strings.TrimSpace(strings.TrimPrefix(lines[0], ServeReadyPrefix))
	if !strings.HasPrefix(lines[0], ServeReadyPrefix) || url == "" {
		return "", "", nil, fmt.Errorf("printed %q, want %q followed by its URL", lines[0], ServeReadyPrefix)
	}
	var reg struct {
		Blocks string   `json:"blocks"`
		Addrs  []string `json:"addrs"`
	}
	js, ok := strings.CutPrefix(lines[1], ServeRegistryPrefix)
	if !ok || json.Unmarshal([]byte(js), &reg) != nil || reg.Blocks == "" || len(reg.Addrs) == 0 {
		return "", "", nil, fmt.Errorf("printed %q, want %q and a JSON object with its blocks and addresses", lines[1], ServeRegistryPrefix)
	}
	return url, reg.Blocks, reg.Addrs, nil
}

// StartProxy starts `swarm proxy` of model (tokenizer may be empty) on
// loopback, joined to the swarm through bootstrap, as a child of g, and
// returns the URL of its HTTP API once it printed it (within timeout).
// extra are more flags, appended as given.
func StartProxy(ctx context.Context, g *supervise.Group, timeout time.Duration, exe, model, tokenizer string, bootstrap []string, extra ...string) (string, *supervise.Child, error) {
	args := []string{"proxy", "--model", model}
	if tokenizer != "" {
		args = append(args, "--tokenizer", tokenizer)
	}
	args = append(args, "--listen", "127.0.0.1:0", "--p2p-listen", "/ip4/127.0.0.1/tcp/0", "--bootstrap", strings.Join(bootstrap, ","), "--log-level", "warn")
	c, err := g.Start(ctx, timeout, 1, exe, append(args, extra...)...)
	if err != nil {
		return "", nil, err
	}
	url := strings.TrimSpace(strings.TrimPrefix(c.Ready[0], ProxyReadyPrefix))
	if !strings.HasPrefix(c.Ready[0], ProxyReadyPrefix) || url == "" {
		return "", nil, fmt.Errorf("proxy %d printed %q, want %q followed by its URL", c.Cmd.Process.Pid, c.Ready[0], ProxyReadyPrefix)
	}
	return url, c, nil
}
