package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// generateOptions are the flags of `swarm generate`.
type generateOptions struct {
	local     bool
	servers   []string
	bootstrap []string

	model     string
	tokenizer string
	prompt    string
	maxTokens int
	sampler   blocks.SamplerConfig
	seedSet   bool
	stats     bool

	// --servers only.
	stepTimeout  time.Duration
	allocTimeout time.Duration
	wireDType    string
}

func newGenerateCmd() *cobra.Command {
	var o generateOptions
	cmd := &cobra.Command{
		Use:   "generate --model PATH --prompt TEXT (--local | --servers URL,... | --bootstrap MULTIADDR ...)",
		Short: "Generate text from a prompt, streaming it to stdout",
		Long: `generate encodes the prompt (with BOS, as llama2.c's run.c does), runs the
model's blocks and samples up to --max-tokens new tokens, printing the prompt
and then each token's text as soon as it is sampled, and a final newline.
Generation stops early when the model samples BOS or EOS.

With --local every block runs in this process. With --servers this process
loads only the model's head (embeddings, final norm, LM head, tokenizer):
the servers given are candidates; the client reads their /v1/info, checks
that they serve the same model, measures their round trip times, chooses a
chain covering all blocks with WS-RR routing, and sends the hidden states to
each server of the chain in turn. If a server dies, errors or does not
answer a step within --step-timeout, the client replaces it by other
candidates covering its blocks, replays that server's input history at the
same positions and continues: the output is the same as without the
failure. --bootstrap (discovery through the registry) is not implemented
yet.

The model is a GGUF file, a llama2.c .bin checkpoint (its tokenizer is
tokenizer.bin beside it unless --tokenizer says otherwise) or a Hugging Face
directory (config.json + safetensors + tokenizer.model or tokenizer.json).

Examples:
  swarm generate --local --model stories260K.bin --tokenizer tok512.bin --temperature 0 --max-tokens 200
  swarm generate --local --model stories260K.gguf --prompt "Once upon a time" --seed 42
  swarm generate --servers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --model stories260K.bin --tokenizer tok512.bin --temperature 0 --stats`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			return runGenerate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.local, "local", false, "run every block in this process")
	f.StringSliceVar(&o.servers, "servers", nil, "comma-separated candidate servers, ws://HOST:PORT or HOST:PORT; the client chooses a chain covering all blocks among them")
	f.StringSliceVar(&o.bootstrap, "bootstrap", nil, "multiaddr of a swarm node to discover servers through (not implemented yet; repeatable)")
	f.StringVar(&o.model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint or a Hugging Face directory (required)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer file (tokenizer.bin, tokenizer.model, tokenizer.json, .gguf) instead of the model's own")
	f.StringVar(&o.prompt, "prompt", "", "text to continue; empty starts from BOS alone")
	f.IntVar(&o.maxTokens, "max-tokens", 256, "most tokens to generate; 0 fills the model's context")
	f.Float64Var(&o.sampler.Temperature, "temperature", 1.0, "sampling temperature; 0 is greedy (argmax, lowest id on ties)")
	f.Float64Var(&o.sampler.TopP, "top-p", 0.9, "nucleus sampling: sample from the most likely tokens whose probabilities sum past P; 0 or 1 is off")
	f.IntVar(&o.sampler.TopK, "top-k", 0, "sample only from the K most likely tokens; 0 is off")
	f.Float64Var(&o.sampler.RepetitionPenalty, "repetition-penalty", 1.0, "divide positive (multiply negative) logits of tokens already seen by R; 1 is off")
	f.Uint64Var(&o.sampler.Seed, "seed", 0, "random seed of the sampler (default: a random seed)")
	f.BoolVar(&o.stats, "stats", false, "print time to first token, time per output token and tokens/s to stderr at the end; with --servers also each hop's blocks, median round trip time t_cj (minus server compute) and median server compute per token")
	f.DurationVar(&o.stepTimeout, "step-timeout", client.DefaultStepTimeout, "with --servers: how long a server may take to answer one step before the client fails over to another")
	f.DurationVar(&o.allocTimeout, "alloc-timeout", client.DefaultAllocTimeout, "with --servers: how long a server may queue the session for attention-cache room")
	f.StringVar(&o.wireDType, "wire-dtype", "f32", "with --servers: dtype of hidden states on the wire: f32 (exact), f16 or bf16 (half the bytes, rounded)")
	return cmd
}

// runGenerate checks the flags, opens the model where the mode says and
// streams the generation to out.
func runGenerate(ctx context.Context, out, errOut io.Writer, o generateOptions) error {
	modes := 0
	for _, on := range []bool{o.local, len(o.servers) > 0, len(o.bootstrap) > 0} {
		if on {
			modes++
		}
	}
	switch {
	case modes != 1:
		return fmt.Errorf("%w: choose exactly one of --local, --servers or --bootstrap", errUsage)
	case o.model == "":
		return fmt.Errorf("%w: --model is required", errUsage)
	case o.maxTokens < 0:
		return fmt.Errorf("%w: --max-tokens %d, want >= 0", errUsage, o.maxTokens)
	}
	if !o.seedSet {
		o.sampler.Seed = rand.Uint64()
	}
	sampler, err := blocks.NewSampler(o.sampler)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	head, runner, closeBackend, err := openBackend(ctx, errOut, o)
	if err != nil {
		return err
	}
	defer closeBackend()
	return streamGeneration(ctx, out, errOut, head, runner, sampler, o)
}

// openBackend returns the model's head (always loaded in this process) and
// where its blocks run, by mode. The data plane adds --servers and
// --bootstrap here: load only the head (blocks.Model.LoadHead) and return a
// blockRunner whose Forwarder is a client session over a chain of servers.
func openBackend(ctx context.Context, errOut io.Writer, o generateOptions) (blocks.Head, blockRunner, func() error, error) {
	switch {
	case len(o.servers) > 0:
		return openServers(ctx, errOut, o)
	case len(o.bootstrap) > 0:
		return nil, nil, nil, fmt.Errorf("generate --bootstrap: %w", errNotImplemented)
	}
	return openLocal(o)
}

// blockRunner returns a Forwarder over all blocks of the model for one
// generation of up to maxLength positions, and a function that releases it.
// --local runs a Session in this process; --servers/--bootstrap will return
// a client session over a chain of servers (the seam for the data plane).
type blockRunner func(maxLength int) (blocks.Forwarder, func() error, error)

// openLocal loads the whole model in this process: the head (embeddings,
// final norm, LM head, tokenizer) and one engine for blocks [0, L).
func openLocal(o generateOptions) (blocks.Head, blockRunner, func() error, error) {
	var opts []blocks.Option
	if o.tokenizer != "" {
		opts = append(opts, blocks.WithTokenizer(o.tokenizer))
	}
	m, err := blocks.Open(o.model, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	head, err := m.LoadHead()
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	engine, err := m.LoadSpan(m.Info().Blocks())
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	m.Close() // the weights are in memory now
	runner := func(maxLength int) (blocks.Forwarder, func() error, error) {
		s, err := engine.NewSession(engine.Span(), maxLength)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	return head, runner, engine.Close, nil
}

// streamGeneration encodes the prompt, prints it, then generates with
// blocks.Generate, writing each token's bytes to out as soon as it is
// sampled (out is unbuffered: one write per token), and a final newline.
func streamGeneration(ctx context.Context, out, errOut io.Writer, head blocks.Head, run blockRunner, sampler *blocks.Sampler, o generateOptions) error {
	tok := head.Tokenizer()
	if tok == nil {
		return fmt.Errorf("%w: the model %s comes without a tokenizer: pass --tokenizer PATH", errUsage, o.model)
	}
	prompt, err := tok.Encode(o.prompt, true)
	if err != nil {
		return fmt.Errorf("encoding the prompt: %w", err)
	}
	info := head.Info()
	maxTokens := o.maxTokens
	if ctxLeft := info.MaxSeqLen - len(prompt) + 1; info.MaxSeqLen > 0 && (maxTokens == 0 || maxTokens > ctxLeft) {
		if ctxLeft < 1 {
			return fmt.Errorf("%w: the prompt has %d tokens, the model's context is %d", errUsage, len(prompt), info.MaxSeqLen)
		}
		maxTokens = ctxLeft // as run.c caps steps at seq_len
	}
	fw, release, err := run(max(len(prompt)+maxTokens-1, len(prompt)))
	if err != nil {
		return err
	}
	defer release()

	for i := 1; i < len(prompt); i++ {
		if _, err := io.WriteString(out, tok.Decode(prompt[i-1], prompt[i])); err != nil {
			return err
		}
	}
	start := time.Now()
	var first time.Duration
	ids, err := blocks.Generate(ctx, head, fw, prompt, maxTokens, sampler, func(prev, next int) error {
		if first == 0 {
			first = time.Since(start)
		}
		_, err := io.WriteString(out, tok.Decode(prev, next))
		return err
	})
	if _, werr := io.WriteString(out, "\n"); err == nil {
		err = werr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("generate: interrupted after %d tokens", len(ids))
		}
		return err
	}
	if o.stats && len(ids) > 0 {
		total := time.Since(start)
		tpot := time.Duration(0)
		if len(ids) > 1 {
			tpot = (total - first) / time.Duration(len(ids)-1)
		}
		fmt.Fprintf(errOut, "prompt %d tokens, generated %d; TTFT %v, TPOT %v, %.1f tokens/s\n",
			len(prompt), len(ids), first.Round(time.Microsecond), tpot.Round(time.Microsecond),
			float64(len(ids))/total.Seconds())
	}
	return nil
}
