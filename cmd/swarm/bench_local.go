package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/internal/enginebench"
	"github.com/swarmllm/swarm/internal/llamabench"
)

const benchLocalLong = `bench local measures this engine on a whole model in this process (the path
of swarm generate --local): each round loads --model, times a prefill of a
--prompt-tokens synthetic prompt (one forward pass up to the greedy next
token) and --gen-tokens greedy single-token decode steps. It prints the
medians of --rounds rounds and, for a GGUF file, the weight bytes a decode
step reads and the fraction of this machine's read bandwidth (measured first
with --threads goroutines, as swarm bench memory does) that decode reaches.

With --vs-llama-cpp it also runs llama.cpp on the same file through
clients/js/llama_bench.mjs (node and the node-llama-cpp package pinned in
clients/js), rounds interleaved (ours, theirs, ours, ...), and prints both
engines' medians and the ratio ours/theirs. Both engines use --threads
threads (ours through GOMAXPROCS).

Example:
  swarm bench local --model tinyllama-q8_0.gguf --vs-llama-cpp --rounds 5 --threads 2`

func newBenchLocalCmd() *cobra.Command {
	cfg := enginebench.DefaultConfig()
	var vs, asJSON bool
	var bwSize, script string
	cmd := &cobra.Command{
		Use:   "local --model F.gguf [--vs-llama-cpp] [--rounds 5] [--prompt-tokens 127] [--gen-tokens 64] [--threads 2] [--json]",
		Short: "Measure load, prefill and decode of the whole model in this process, optionally against llama.cpp",
		Long:  benchLocalLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := humanize.ParseBytes(bwSize)
			if err != nil {
				return fmt.Errorf("%w: --bandwidth-size %q: want a byte count such as 1GiB or 0: %w", errUsage, bwSize, err)
			}
			cfg.BandwidthSize = int64(n)
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
			runtime.GOMAXPROCS(cfg.Threads)
			rep, err := enginebench.Run(cmd.Context(), cfg)
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
	f.StringVar(&cfg.Model, "model", "", "model file: GGUF (required for --vs-llama-cpp), a llama2.c .bin checkpoint or a Hugging Face directory (required)")
	f.BoolVar(&vs, "vs-llama-cpp", false, "also run llama.cpp (node-llama-cpp in clients/js) on the same file, rounds interleaved")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per engine; medians are printed")
	f.IntVar(&cfg.PromptTokens, "prompt-tokens", cfg.PromptTokens, "prompt length of the prefill, tokens")
	f.IntVar(&cfg.GenTokens, "gen-tokens", cfg.GenTokens, "greedy decode steps timed after the prompt")
	f.IntVar(&cfg.Threads, "threads", cfg.Threads, "threads of both engines (ours: GOMAXPROCS)")
	f.StringVar(&bwSize, "bandwidth-size", "1GiB", "buffer read to measure the bandwidth bound; 0 skips it")
	f.StringVar(&script, "llama-bench", "", "path of llama_bench.mjs (default: "+llamabench.Script+" found from the working directory upward)")
	f.BoolVar(&asJSON, "json", false, `print {"swarm":{"rounds":[..],"median":{"load_s":..,"prefill_tok_s":..,"decode_tok_s":..,"bandwidth_fraction":..}},"llama_cpp":{..},"ratio":{..},...}`)
	return cmd
}
