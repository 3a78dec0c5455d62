package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/internal/llamabench"
	"github.com/swarmllm/swarm/server/serverbench"
	"github.com/swarmllm/swarm/swarm"
)

// newBenchCmd is `swarm bench`, the parent of the benchmarks that need no
// other command's context.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark parts of the swarm on this machine",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchServerCmd(), newBenchChurnCmd(), newBenchMemoryCmd(), newBenchFlopsCmd(), newBenchLocalCmd())
	var cpuProfile string
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole benchmark to `FILE` (read it with go tool pprof)")
	// The profile stops when the benchmark's RunE returns, with or without
	// an error (cobra skips PersistentPostRunE after an error, and a
	// failing benchmark is one worth profiling).
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if root := c.Root(); root.PersistentPreRunE != nil {
			if err := root.PersistentPreRunE(c, args); err != nil {
				return err
			}
		}
		if cpuProfile == "" || c.RunE == nil {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return fmt.Errorf("%w: --cpuprofile: %w", errUsage, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		run := c.RunE
		c.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("--cpuprofile: %w", cerr)
			}
			return err
		}
		return nil
	}
	return cmd
}

const benchServerLong = `bench server measures one server's decode throughput under concurrency. It
starts a server for --blocks of --model in this process and, for each N in
--concurrency, opens N sessions on loopback websockets, prefills a --prompt
token prompt in each, runs --warmup untimed decode steps, then times --tokens
single-token decode steps of all N sessions at once. It prints the aggregate
decode tok/s, the mean time per output token of a session (TPOT) and the
GFLOP/s of the span's matrix products at that rate, for --device cpu also as
a fraction of this machine's peak multiply-add rate (swarm bench flops; a GPU
server's figures have no such bound here). With --prefill L it then
times a prompt of L tokens sent as one step against the same prompt sent one
token per step.

Client and server share this machine's CPUs; the client side is small (no
model head, synthetic hidden states).

With --vs-llama-cpp (a GGUF file served whole, --blocks 0:L) llama.cpp then
decodes the same file through clients/js/llama_bench.mjs (node and the
node-llama-cpp package pinned in clients/js), one context of N sequences
for each N of --concurrency, GOMAXPROCS threads, and each row gains its
aggregate tok/s and the ratio ours/theirs. Its steps include the LM head and
sampling, ours only the blocks.

Example:
  swarm bench server --model 7b.gguf --blocks 0:4 --concurrency 1,4,16 --tokens 64 --json`

func newBenchServerCmd() *cobra.Command {
	cfg := serverbench.DefaultConfig()
	var blocks, concurrency string
	var asJSON, vs bool
	var script string
	cmd := &cobra.Command{
		Use:   "server --model PATH --blocks START:END [--concurrency 1,4,16] [--tokens N] [--vs-llama-cpp] [--json]",
		Short: "Measure a server's aggregate decode throughput with N concurrent sessions",
		Long:  benchServerLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			span, err := swarm.ParseSpan(blocks)
			if err != nil {
				return fmt.Errorf("%w: --blocks %q: %w", errUsage, blocks, err)
			}
			cfg.Blocks = span
			if cfg.Concurrency, err = serverbench.ParseConcurrency(concurrency); err != nil {
				return fmt.Errorf("%w: --concurrency: %w", errUsage, err)
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if vs {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				if cfg.LlamaBench, err = llamabench.FindScript(wd, script); err != nil {
					return err
				}
			}
			rep, err := serverbench.Run(cmd.Context(), cfg, nil)
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
	f.StringVar(&cfg.Model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint or a Hugging Face directory (required)")
	f.StringVar(&blocks, "blocks", "", "span of blocks to serve, START:END, 0-based half-open (required)")
	f.StringVar(&concurrency, "concurrency", "1,4,16", "comma-separated numbers of concurrent sessions")
	f.StringVar(&cfg.Device, "device", "cpu", "the server's engine backend, as `swarm serve --device` (cpu, cuda, cuda:N, auto)")
	f.IntVar(&cfg.Tokens, "tokens", cfg.Tokens, "timed decode steps per session")
	f.IntVar(&cfg.Prompt, "prompt", cfg.Prompt, "prompt tokens each session prefills before decoding")
	f.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "untimed decode steps per session before the timed ones")
	f.IntVar(&cfg.Prefill, "prefill", cfg.Prefill, "prompt length of the prefill comparison (one step vs one token per step); 0 skips it")
	f.StringVar(&cfg.MeasureCacheDir, "measure-cache", "", "the server's measurement cache directory (default: the user cache dir)")
	f.BoolVar(&vs, "vs-llama-cpp", false, "then run llama.cpp (node-llama-cpp in clients/js) on the same GGUF file with N sequences per --concurrency value; needs --blocks 0:L")
	f.StringVar(&script, "llama-bench", "", "path of llama_bench.mjs (default: "+llamabench.Script+" found from the working directory upward)")
	f.BoolVar(&asJSON, "json", false, `print {"results":[{"concurrency":N,"aggregate_tok_s":..,"tpot_s":..,"gflops":..[,"llama_cpp_aggregate_tok_s":..,"ratio_vs_llama_cpp":..]},...],"prefill":{...}[,"llama_cpp":{...}],"device":..,"kernels":..[,"peak_gflops":..],"tau_s":..,"tau_batch":[{"batch":B,"tau":..},...]} (tau: the server's own engine measurement, seconds per block per step; peak_gflops: the CPU's multiply-add peak, only for --device cpu)`)
	return cmd
}
