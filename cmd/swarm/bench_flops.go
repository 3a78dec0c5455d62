package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/internal/flops"
)

const benchFlopsLong = `bench flops measures the peak float32 multiply-add rate of this machine's
cores, the bound the GFLOP/s of 'swarm bench server' are compared with. Each
goroutine runs independent fused multiply-adds on registers only (no memory
traffic) through the widest vector unit the CPU offers (AVX-512, else
AVX2/FMA, else a portable scalar Go loop; -tags purego forces Go), best of
--passes passes, and prints GFLOP/s (10^9 float32 operations per second, a
multiply-add counting 2) per goroutine count and the kernel used.

Example:
  swarm bench flops --threads 1,2 --json`

func newBenchFlopsCmd() *cobra.Command {
	cfg := flops.DefaultConfig()
	var threads, kernel string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "flops [--threads 1,2] [--json]",
		Short: "Measure this machine's peak float32 multiply-add rate per thread count",
		Long:  benchFlopsLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if threads != "" {
				var err error
				if cfg.Threads, err = parseCounts(threads); err != nil {
					return fmt.Errorf("%w: --threads: %w", errUsage, err)
				}
			}
			cfg.Kernel = flops.Kernel(kernel)
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			rep, err := flops.Measure(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), rep, asJSON)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	f := cmd.Flags()
	f.StringVar(&threads, "threads", "", "comma-separated goroutine counts (default 1 up to GOMAXPROCS)")
	f.IntVar(&cfg.Passes, "passes", cfg.Passes, "passes per thread count; the best is printed")
	f.StringVar(&kernel, "kernel", "", "loop: avx512, avx2 or go (default: the widest this CPU supports)")
	f.BoolVar(&asJSON, "json", false, `print {"kernel":..,"available":[..],"passes":..,"results":[{"threads":N,"gflop_s":..},...]}`)
	return cmd
}
