package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/internal/churn"
)

func newBenchChurnCmd() *cobra.Command {
	cfg := churn.DefaultConfig()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "churn --model PATH [--tokenizer PATH] [--servers N] [--streams N] [--duration D] [--kill-every D] [--json]",
		Short: "Measure latency and correctness of a local swarm while its servers are killed, stopped and replaced",
		Long:  churn.Help,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			rep, err := churn.Run(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			return rep.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	cfg.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"requests":..,"failed":..,"wrong_outputs":..,"p99_baseline_s":..,"p99_churn_s":..,...}`)
	return cmd
}
