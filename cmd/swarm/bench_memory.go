package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/internal/membw"
)

const benchMemoryLong = `bench memory measures how fast this machine's cores can read memory, the
bound every decode figure is compared with. It fills a --size buffer (much
larger than the last-level cache), then reads it with each goroutine count
of --threads through the widest read loop the CPU offers (AVX-512 64-byte
loads, else AVX2, else a portable Go loop; -tags purego forces Go), best of
--passes passes, and prints GB/s (10^9 bytes/s) per count and the kernel
used.

Example:
  swarm bench memory --size 1GiB --threads 1,2 --json`

func newBenchMemoryCmd() *cobra.Command {
	cfg := membw.DefaultConfig()
	var size, threads, kernel string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "memory [--size 1GiB] [--threads 1,2] [--json]",
		Short: "Measure this machine's memory read bandwidth per thread count",
		Long:  benchMemoryLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := humanize.ParseBytes(size)
			if err != nil {
				return fmt.Errorf("%w: --size %q: want a byte count such as 1GiB or 512MiB: %w", errUsage, size, err)
			}
			cfg.Size = int64(n)
			if threads != "" {
				if cfg.Threads, err = parseCounts(threads); err != nil {
					return fmt.Errorf("%w: --threads: %w", errUsage, err)
				}
			}
			cfg.Kernel = membw.Kernel(kernel)
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			rep, err := membw.Measure(cmd.Context(), cfg)
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
	f.StringVar(&size, "size", "1GiB", "buffer size read per pass (1GiB, 512MiB, ...); keep it much larger than the last-level cache")
	f.StringVar(&threads, "threads", "", "comma-separated goroutine counts (default 1 up to GOMAXPROCS)")
	f.IntVar(&cfg.Passes, "passes", cfg.Passes, "passes per thread count; the best is printed")
	f.StringVar(&kernel, "kernel", "", "read loop: avx512, avx2 or go (default: the widest this CPU supports)")
	f.BoolVar(&asJSON, "json", false, `print {"kernel":..,"available":[..],"size_bytes":..,"passes":..,"results":[{"threads":N,"gb_s":..},...]}`)
	return cmd
}

// parseCounts parses a comma-separated list of positive integers such as
// "1,2,4".
func parseCounts(s string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// report is what a bench command prints: as JSON for scripts, or a table.
type report interface {
	WriteJSON(w io.Writer) error
	WriteTable(w io.Writer) error
}

// writeReport writes rep to w as JSON (asJSON) or as a table.
func writeReport(w io.Writer, rep report, asJSON bool) error {
	if asJSON {
		return rep.WriteJSON(w)
	}
	return rep.WriteTable(w)
}
