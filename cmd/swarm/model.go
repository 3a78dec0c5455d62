package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
)

func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Inspect model files and synthesize random-weight models",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%w: choose a subcommand (see swarm model --help)", errUsage)
		},
	}
	cmd.AddCommand(newModelSynthCmd(), newModelInfoCmd())
	return cmd
}

// synthOptions are the flags of `swarm model synth`.
type synthOptions struct {
	cfg       synth.Config
	dtype     string
	tokenizer string
	out       string
	formats   []string
	json      bool
}

func newModelSynthCmd() *cobra.Command {
	var o synthOptions
	cmd := &cobra.Command{
		Use:   "synth --layers N --dim D --ffn F --heads H --kv-heads K --vocab V --dtype f16|f32 --out DIR",
		Short: "Write a random-weight model of any supported architecture (for benchmarks and format tests)",
		Long: `synth writes a model of --arch (llama, mistral, qwen2, qwen3 or gemma3: qwen2 with
q/k/v biases, qwen3 and gemma3 with q/k norms, gemma3 with a 4-token sliding window
on every other block) with random weights (seeded: the same flags give the
same bytes) as a Hugging Face directory: DIR/config.json, DIR/model.safetensors,
and the tokenizer as SentencePiece DIR/tokenizer.model and DIR/tokenizer.json,
with a Llama-2-style vocabulary (3 special pieces, 256 byte pieces, then
printable characters and merges). --tokenizer FILE uses a real Hugging Face
tokenizer.json instead (copied with its tokenizer_config.json; the vocabulary
size follows it), embedded in GGUF as llama.cpp's converter does.

--formats can add the same model as GGUF (DIR/NAME.gguf, tokenizer embedded)
and as a llama2.c checkpoint (DIR/NAME.bin, version 0, with DIR/tokenizer.bin):
all files hold the same weights, so they give the same logits.

Example (a 32-block model with 7B-shaped blocks needs ~13 GB as f16):
  swarm model synth --layers 2 --dim 256 --ffn 688 --heads 8 --kv-heads 4 --vocab 512 --dtype f16 --out /tmp/m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSynth(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	d := synth.DefaultConfig()
	f := cmd.Flags()
	f.StringVar(&o.cfg.Arch, "arch", "llama", "architecture: llama, mistral, qwen2, qwen3 or gemma3 (llama2c only for llama and mistral)")
	f.IntVar(&o.cfg.Layers, "layers", d.Layers, "number of transformer blocks L")
	f.IntVar(&o.cfg.Dim, "dim", d.Dim, "hidden size d_model")
	f.IntVar(&o.cfg.FFN, "ffn", d.FFN, "SwiGLU inner size")
	f.IntVar(&o.cfg.Heads, "heads", d.Heads, "query heads (must divide --dim, leaving an even head size)")
	f.IntVar(&o.cfg.KVHeads, "kv-heads", d.KVHeads, "key/value heads (must divide --heads)")
	f.IntVar(&o.cfg.Vocab, "vocab", d.Vocab, "vocabulary size, >= 259")
	f.StringVar(&o.dtype, "dtype", "f16", "weight dtype: f32, f16, bf16; with --formats gguf also q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs or the mix q4_k_m (dims multiples of 32 or 256)")
	f.StringVar(&o.out, "out", "", "output directory, created if missing (required)")
	f.Uint64Var(&o.cfg.Seed, "seed", 0, "random seed of the weights")
	f.StringVar(&o.cfg.Name, "name", "", "model name (default: the base name of --out)")
	f.IntVar(&o.cfg.MaxSeqLen, "max-seq-len", d.MaxSeqLen, "context length written to the files, tokens")
	f.BoolVar(&o.cfg.Tied, "tied", false, "tie the LM head to the token embedding")
	f.StringVar(&o.tokenizer, "tokenizer", "", "a Hugging Face tokenizer.json (with tokenizer_config.json beside it) to use instead of the synthesized vocabulary; sets the vocabulary size, overriding --vocab")
	f.StringSliceVar(&o.formats, "formats", []string{"hf"}, "comma-separated formats to write: hf, gguf, llama2c")
	f.BoolVar(&o.json, "json", false, "print the model's ModelInfo as JSON (as loaded back from the first format written)")
	return cmd
}

func runSynth(out, errOut io.Writer, o synthOptions) error {
	if o.out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	var err error
	if o.cfg.DType, o.cfg.Mix, err = synth.ParseDType(o.dtype); err != nil {
		return fmt.Errorf("%w: --dtype: %w", errUsage, err)
	}
	if o.cfg.Name == "" {
		o.cfg.Name = filepath.Base(filepath.Clean(o.out))
	}
	if o.tokenizer != "" {
		if o.cfg, err = o.cfg.WithTokenizer(o.tokenizer); err != nil {
			return fmt.Errorf("%w: --tokenizer: %w", errUsage, err)
		}
	}
	if err := o.cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(o.formats) == 0 {
		return fmt.Errorf("%w: --formats is empty (want hf, gguf and/or llama2c)", errUsage)
	}
	formats, err := synth.ParseFormats(o.formats)
	if err != nil {
		return fmt.Errorf("%w: --formats: %w", errUsage, err)
	}
	// One format at a time, with a progress line each: a large model
	// takes tens of seconds per format.
	var written []string
	for _, f := range formats {
		start := time.Now()
		fmt.Fprintf(errOut, "swarm model synth: writing %s (%d blocks) into %s\n", f, o.cfg.Layers, o.out)
		w, err := synth.WriteFormats(o.out, o.cfg, []synth.Format{f})
		if err != nil {
			return err
		}
		fmt.Fprintf(errOut, "swarm model synth: wrote %s in %s\n", w[0], time.Since(start).Round(time.Millisecond))
		written = append(written, w...)
	}
	if !o.json {
		for _, p := range written {
			fmt.Fprintln(out, p)
		}
		return nil
	}
	m, err := blocks.Open(written[0])
	if err != nil {
		return fmt.Errorf("reading back %s: %w", written[0], err)
	}
	defer m.Close()
	return writeModelJSON(out, m.Info())
}

func newModelInfoCmd() *cobra.Command {
	var path, tok string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info --model PATH [--json]",
		Short: "Print a model's shape, dtype, per-block bytes s_m and cache bytes per token",
		Long: `info opens a model (GGUF file, llama2.c .bin, Hugging Face directory or hub
repository), reads only its metadata, and prints the swarm.ModelInfo that servers and placement
use: blocks, d_model, heads, KV heads, FFN size, vocab, dtype, block_bytes
(s_m, bytes of one block's weights) and cache_bytes_per_token (bytes of
attention cache per block per token of a session).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return fmt.Errorf("%w: --model is required", errUsage)
			}
			o := generateOptions{model: path, tokenizer: tok}
			if err := o.resolveModel(cmd.Context(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			m, err := blocks.Open(o.model, o.modelOptions()...)
			if err != nil {
				return err
			}
			defer m.Close()
			info := m.Info()
			if asJSON {
				return writeModelJSON(cmd.OutOrStdout(), info)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "name %s (%s %s, %s)\n", info.Name, info.Arch, m.Format(), info.DType)
			fmt.Fprintf(w, "blocks %d, d_model %d, heads %d, kv heads %d, head dim %d, ffn %d, vocab %d, max seq len %d\n",
				info.NBlocks, info.DModel, info.NHeads, info.NKVHeads, info.HeadDim, info.FFNDim, info.Vocab, info.MaxSeqLen)
			fmt.Fprintf(w, "rope theta %g, norm eps %g, tied embeddings %v, bos %d, eos %d\n",
				info.RopeTheta, info.NormEps, info.TiedEmbeddings, info.BOS, info.EOS)
			fmt.Fprintf(w, "block bytes (s_m) %d, cache bytes per token per block %d\n", info.BlockBytes, info.CacheBytesPerToken)
			if info.SlidingWindow > 0 {
				fmt.Fprintf(w, "sliding window %d tokens, local:global pattern %d (0: every block slides)\n", info.SlidingWindow, info.SlidingPattern)
			}
			if p := m.TokenizerPath(); p != "" {
				fmt.Fprintf(w, "tokenizer %s\n", p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint, a Hugging Face directory or a hub repository ORG/REPO[@REVISION][:FILE] (only headers are downloaded) (required)")
	cmd.Flags().StringVar(&tok, "tokenizer", "", "tokenizer file to report instead of the model's own")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the ModelInfo as JSON")
	return cmd
}

func writeModelJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
