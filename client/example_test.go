package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// Example streams a greedy story through a chain of servers chosen among
// three candidates (started with `swarm serve --blocks 0:2`, `2:4`, `4:5`).
// The client loads only the model's head.
func Example() {
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
	c, err := client.New(head, []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ctx := context.Background()
	prompt, _ := head.Tokenizer().Encode("Once upon a time", true)
	const maxTokens = 100
	sess, err := c.Open(ctx, len(prompt)+maxTokens-1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // e.g. which blocks no server covers
		return
	}
	defer sess.Close()
	sampler, _ := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0})
	for tok, err := range sess.Generate(ctx, prompt, maxTokens, sampler) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		fmt.Print(tok.Text)
	}
	for _, hop := range sess.Stats().Hops {
		fmt.Fprintf(os.Stderr, "%s blocks %s: RTT t_cj %v\n", hop.Server, hop.Span, hop.RTT)
	}
}
