package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// Client is a session client whose candidates are the registry's servers
// of its model, with the client-only swarm member that keeps the registry.
// Close it when done.
type Client struct {
	*client.Client
	// Member is the client-only member (node and registry replica).
	Member *Member
	// Candidates lists the model's routable servers from Member's registry.
	Candidates *Candidates
}

// NewClient joins the swarm as a client-only member (JoinClient with pc
// and rc), waits until the routable servers of the head's model (of the
// allowed providers; none given: any) cover every block (WaitCovered), and
// returns a client that routes over them, reaches them by websocket or
// libp2p streams (Candidates.ClientOptions) and fails over to servers that
// join later. ctx bounds the join and the wait only.
//
// Errors: JoinClient's, ErrBadConfig, an *UncoveredError naming the blocks
// no SERVING server hosts when ctx ends first, client.New's.
func NewClient(ctx context.Context, pc p2p.Config, rc registry.Config, head blocks.Head, providers []string, opts ...client.Option) (*Client, error) {
	cn, err := JoinClient(ctx, pc, rc)
	if err != nil {
		return nil, err
	}
	var copts []CandidatesOption
	if len(providers) > 0 {
		copts = append(copts, WithProviders(providers...))
	}
	cands, err := NewCandidates(cn.Registry, head.Info(), copts...)
	if err == nil {
		err = cands.WaitCovered(ctx)
	}
	var c *client.Client
	if err == nil {
		c, err = client.New(head, nil, append(cands.ClientOptions(cn.Node.Host()), opts...)...)
	}
	if err != nil {
		return nil, errors.Join(err, cn.Close())
	}
	return &Client{Client: c, Member: cn, Candidates: cands}, nil
}

// Close leaves the swarm (sessions opened by the client should be closed
// first).
func (c *Client) Close() error {
	if err := c.Member.Close(); err != nil {
		return fmt.Errorf("node: leave the swarm: %w", err)
	}
	return nil
}
