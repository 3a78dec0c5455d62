package churn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// BlackHole is what the fake server saw: a registry entry of its own key
// advertising the whole model at a loopback port that accepts connections,
// reads their request line and never answers (issue 19, failure 2).
type BlackHole struct {
	// InfoProbes counts the connections that asked for /v1/info;
	// Inference the ones that asked for /v1/inference (a session routed to
	// it); Other the rest.
	InfoProbes int64 `json:"info_probes"`
	Inference  int64 `json:"inference_dials"`
	Other      int64 `json:"other_conns"`
}

// blackHole is a running fake server: a listener and a registry member
// heartbeating its entry.
type blackHole struct {
	ln     net.Listener
	member *node.Member
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	closed bool

	info, inference, other atomic.Int64
}

// startBlackHole listens on 127.0.0.3 (another loopback address than the
// swarm's) and joins the swarm through bootstrap, publishing as SERVING
// a copy of a real server's entry (so that it looks like one: tau,
// memory, cache room) with the whole model's span and only the black
// hole's websocket URL as endpoint.
func startBlackHole(ctx context.Context, bootstrap []string, nBlocks int) (*blackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		return nil, fmt.Errorf("churn: black hole: %w", err)
	}
	b := &blackHole{ln: ln}
	b.wg.Go(b.accept)
	pc := p2p.DefaultConfig()
	pc.ListenAddrs, pc.Bootstrap = []string{"/ip4/127.0.0.1/tcp/0"}, bootstrap
	b.member, err = node.Join(pc, registry.DefaultConfig(), nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("churn: black hole: %w", err), b.close())
	}
	if err := node.SyncRegistry(ctx, b.member.Node, b.member.Registry); err != nil {
		return nil, errors.Join(fmt.Errorf("churn: black hole: %w", err), b.close())
	}
	var model swarm.ServerInfo
	for _, e := range b.member.Registry.Snapshot() {
		if e.Routable() && !e.Info.FullRange {
			model = e.Info
			break
		}
	}
	if model.Model == "" {
		return nil, errors.Join(errors.New("churn: black hole: the registry lists no SERVING server to copy"), b.close())
	}
	model.ID, model.Span, model.ModelBlocks = "", swarm.Span{Start: 0, End: nBlocks}, nBlocks
	model.Sessions = nil
	model.Endpoints = []string{"ws://" + ln.Addr().String() + "/v1/inference"}
	if err := b.member.Registry.Publish(model, swarm.StateServing); err != nil {
		return nil, errors.Join(fmt.Errorf("churn: black hole: publish: %w", err), b.close())
	}
	return b, nil
}

// accept takes connections until the listener closes; each one's request
// line is read and counted, and nothing is ever written.
func (b *blackHole) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		if b.closed {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Go(func() {
			line, _ := bufio.NewReader(c).ReadString('\n')
			switch {
			case strings.Contains(line, "/v1/info"):
				b.info.Add(1)
			case strings.Contains(line, "/v1/inference"):
				b.inference.Add(1)
			default:
				b.other.Add(1)
			}
		})
	}
}

// stats returns the counts so far.
func (b *blackHole) stats() BlackHole {
	return BlackHole{InfoProbes: b.info.Load(), Inference: b.inference.Load(), Other: b.other.Load()}
}

// close leaves the swarm (the entry then ages out: no LEFT is sent, as a
// vanished Sybil sends none), closes the listener and every connection.
func (b *blackHole) close() error {
	var err error
	if b.member != nil {
		err = b.member.Close()
	}
	err = errors.Join(err, b.ln.Close())
	b.mu.Lock()
	b.closed = true
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return err
}
