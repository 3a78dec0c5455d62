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

	"github.com/swarmllm/swarm/internal/cliconf"
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
durations use Go syntax ("10ms"), sizes are bytes unless a flag says it takes
human sizes ("8GiB", "500MB").

Every flag can also come from the environment, SWARM_<FLAG> with '-' as '_'
(SWARM_BOOTSTRAP=/ip4/.../p2p/ID,/dnsaddr/..., SWARM_P2P_LISTEN=...), or from a
YAML file given by --config FILE or SWARM_CONFIG whose keys are flag names:

  bootstrap: [/dnsaddr/bootstrap.example.org]
  listen: 0.0.0.0:7001
  announce: ws://node.example.org:7001
  memory: 8GiB

The command line wins over the environment, which wins over the file.`,
		Version:       swarm.Version, // stamped by `make build`; "dev" otherwise
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var configFile string
	root.PersistentFlags().StringVar(&configFile, cliconf.ConfigFlag, "", "YAML file of flag values (keys are flag names, e.g. bootstrap: [...]);\n"+
		"default $SWARM_CONFIG. `swarm plan --config` is its fleet file instead")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		file := configFile
		if file == "" {
			file = os.Getenv(cliconf.EnvName(cliconf.ConfigFlag))
		}
		if cmd.Flags().Lookup(cliconf.ConfigFlag) != root.PersistentFlags().Lookup(cliconf.ConfigFlag) {
			file = "" // the command's own --config (swarm plan's fleet file)
		}
		if err := cliconf.Apply(cmd, file, os.Getenv); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil
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
		newDoctorCmd(),
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
