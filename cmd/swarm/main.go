// Command swarm is the one CLI of the project: it serves spans of a model,
// generates text over a chain of servers (or locally), plans placements,
// simulates fleets and runs a local demo swarm. Run `swarm --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/swarm"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "swarm",
		Short: "Run large language models across many machines",
		Long: `swarm runs a large language model across many machines: each server hosts a
consecutive span of transformer blocks, and a client streams hidden states
through a chain of servers chosen by CG-BP placement and WS-RR routing.

Spans are 0-based and half-open ("--blocks 0:2" hosts blocks 0 and 1),
durations use Go syntax ("10ms"), sizes are bytes.`,
		Version:       swarm.Version, // stamped by `make build`; "dev" otherwise
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newServeCmd(),
		newGenerateCmd(),
		newChatCmd(),
		newTokenizeCmd(),
		newModelCmd(),
		newPlanCmd(),
		newSimCmd(),
		newDemoCmd(),
		newIdentityCmd(),
		newStatusCmd(),
		newPlannerCmd(),
		newRegistryCmd(),
		newProxyCmd(),
		newBenchCmd(),
	)
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "swarm: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
