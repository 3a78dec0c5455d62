package node_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// ExampleCandidates generates through servers discovered in the registry:
// join as a client-only node, wait until the SERVING servers of the model
// cover every block, and give the candidates to client.New (what `swarm
// generate --bootstrap` does).
func ExampleCandidates() {
	m, err := blocks.Open("stories260K.bin", blocks.WithTokenizer("tok512.bin"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	head, err := m.LoadHead()
	m.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc := p2p.DefaultConfig()
	pc.Bootstrap = []string{"/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWSfoN6XVMgDgsPbhqGrVzUzTCMS5B1qCY5iEErr9jN2St"}
	cn, err := node.JoinClient(ctx, pc, registry.DefaultLANConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // no bootstrap peer answered
		return
	}
	defer cn.Close()
	cands, err := node.NewCandidates(cn.Registry, head.Info())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := cands.WaitCovered(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err) // names the blocks no SERVING server hosts
		return
	}
	c, err := client.New(head, nil, cands.ClientOptions(cn.Node.Host())...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	sess, err := c.Open(ctx, 100)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer sess.Close()
	sampler, _ := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0})
	for tok, err := range sess.Generate(ctx, []int{head.Info().BOS}, 100, sampler) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err) // e.g. no server left for a failed hop's blocks
			return
		}
		fmt.Print(tok.Text)
	}
}
