package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/swarmllm/swarm/client"
)

// ExampleIngress streams a greedy story from a swarm ingress (started with
// `swarm proxy --model stories260K.bin --tokenizer tok512.bin --servers
// ...`): the application needs neither the model nor the servers.
func ExampleIngress() {
	c, err := client.NewIngress("http://127.0.0.1:8000", client.WithTrustedProviders("alice", "bob"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	ctx := context.Background()
	for chunk, err := range c.Generate(ctx, "stories260K", "Once upon a time", client.Sampling{MaxTokens: 100, Temperature: 0}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err) // an *IngressError names status and code
			return
		}
		fmt.Print(chunk.Text)
		if chunk.Usage != nil {
			fmt.Fprintf(os.Stderr, "\n%s after %d tokens\n", chunk.FinishReason, chunk.Usage.CompletionTokens)
		}
	}
}

// ExampleIngress_Chat streams a chat completion; the ingress applies the
// model's chat template (or its plain fallback).
func ExampleIngress_Chat() {
	c, err := client.NewIngress("http://127.0.0.1:8000", client.WithAPIKey("sk-..."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	msgs := []client.ChatMessage{{Role: "system", Content: "Tell short stories."}, {Role: "user", Content: "A story about Lily."}}
	seed := int64(42)
	for chunk, err := range c.Chat(context.Background(), "stories260K", msgs, client.Sampling{MaxTokens: 80, Temperature: 0.8, TopP: 0.9, Seed: &seed}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		fmt.Print(chunk.Text)
	}
}
