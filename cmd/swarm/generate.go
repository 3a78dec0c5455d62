package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/local"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// generateOptions are the flags of `swarm generate`.
type generateOptions struct {
	local   bool
	servers []string
	// --bootstrap and the other node flags; the registry's timing.
	p2p  p2p.Config
	reg  registry.Config
	wait time.Duration
	// providers restricts --bootstrap to these providers' servers.
	providers []string

	model     string
	openFile  func(string) (blocks.File, error) // hub models: reads by range (hubmodel.go)
	tokenizer string
	prompt    string
	maxTokens int
	sampler   blocks.SamplerConfig
	seedSet   bool
	stats     bool
	json      bool

	// --servers only.
	stepTimeout  time.Duration
	allocTimeout time.Duration
	failoverWait time.Duration
	wireDType    string
}

func newGenerateCmd() *cobra.Command {
	var o generateOptions
	cmd := &cobra.Command{
		Use:   "generate --model PATH --prompt TEXT (--local | --servers URL,... | --bootstrap MULTIADDR ...)",
		Short: "Generate text from a prompt, streaming it to stdout",
		Long: `generate encodes the prompt (with the special tokens the model's tokenizer
puts before a text: BOS for llama2.c, Llama and Gemma models, none for Qwen),
runs the model's blocks and samples up to --max-tokens new tokens, printing
the prompt and then each token's text as soon as it is sampled, and a final
newline (--json prints one JSON object instead). Generation stops early when
the model samples an end-of-generation token: EOS, an end-of-turn token such
as <|eot_id|>, <|im_end|> or <end_of_turn>, or BOS for llama2.c models.

With --local every block runs in this process. With --servers this process
loads only the model's head (embeddings, final norm, LM head, tokenizer):
the servers given are candidates; the client reads their /v1/info, checks
that they serve the same model, measures their round trip times, chooses a
chain covering all blocks with WS-RR routing, and sends the hidden states to
each server of the chain in turn. If a server dies, errors or does not
answer a step within --step-timeout, the client replaces it by other
candidates covering its blocks, replays that server's input history at the
same positions and continues: the output is the same as without the
failure.

With --bootstrap this process joins the swarm as a client-only node (DHT
client mode; it publishes nothing in the registry), fetches the registry
from a bootstrap peer and waits (up to --wait) until the SERVING servers of
the model cover every block; then the registry is the candidate source: the
client probes those servers, chooses the chain with WS-RR from their
advertised tau and load and its measured RTTs, and on a failure re-routes
among the servers the registry then lists as SERVING (SUSPECTED, DOWN and
LEFT ones are left out). Servers are reached over their websocket, or over
the /swarm/inference/1 libp2p stream when they advertise no websocket or
their websocket does not answer (e.g. behind a NAT, through a relay).

The model is a GGUF file, a llama2.c .bin checkpoint (its tokenizer is
tokenizer.bin beside it unless --tokenizer says otherwise) or a Hugging Face
directory (config.json + safetensors + tokenizer.model or tokenizer.json).

Examples:
  swarm generate --local --model stories260K.bin --tokenizer tok512.bin --temperature 0 --max-tokens 200
  swarm generate --local --model stories260K.gguf --prompt "Once upon a time" --seed 42
  swarm generate --servers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --model stories260K.bin --tokenizer tok512.bin --temperature 0 --stats
  swarm generate --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW... --model stories260K.bin --tokenizer tok512.bin --temperature 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			return runGenerate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	o.p2p = p2p.DefaultConfig()
	o.p2p.DHTMode = p2p.DHTModeClient
	o.reg = registry.DefaultConfig()
	o.wait = 30 * time.Second
	f := cmd.Flags()
	f.BoolVar(&o.local, "local", false, "run every block in this process")
	f.StringSliceVar(&o.servers, "servers", nil, "comma-separated candidate servers, ws://HOST:PORT or HOST:PORT; the client chooses a chain covering all blocks among them")
	o.p2p.AddFlags(f)
	o.reg.AddFlags(f)
	_ = f.MarkHidden("heartbeat-interval") // a client publishes nothing
	_ = f.MarkHidden("dht-mode")           // a client is always a DHT client
	for _, name := range []string{"relay-service", "relay-max-bytes", "relay-max-duration"} {
		_ = f.MarkHidden(name) // a client relays nothing
	}
	f.DurationVar(&o.wait, "wait", o.wait, "with --bootstrap: how long to wait for a bootstrap peer and for SERVING servers covering every block")
	f.StringSliceVar(&o.providers, "providers", nil, "with --bootstrap: use only servers of these providers (comma-separated; default: any)")
	f.StringVar(&o.model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint, a Hugging Face directory or a hub repository ORG/REPO[@REVISION][:FILE] (required)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer file (tokenizer.bin, tokenizer.model, tokenizer.json, .gguf) instead of the model's own")
	f.StringVar(&o.prompt, "prompt", "", "text to continue; empty starts from BOS alone")
	f.IntVar(&o.maxTokens, "max-tokens", 256, "most tokens to generate; 0 fills the model's context")
	f.Float64Var(&o.sampler.Temperature, "temperature", 1.0, "sampling temperature; 0 is greedy (argmax, lowest id on ties)")
	f.Float64Var(&o.sampler.TopP, "top-p", 0.9, "nucleus sampling: sample from the most likely tokens whose probabilities sum past P; 0 or 1 is off")
	f.IntVar(&o.sampler.TopK, "top-k", 0, "sample only from the K most likely tokens; 0 is off")
	f.Float64Var(&o.sampler.RepetitionPenalty, "repetition-penalty", 1.0, "divide positive (multiply negative) logits of tokens already seen by R; 1 is off")
	f.Uint64Var(&o.sampler.Seed, "seed", 0, "random seed of the sampler (default: a random seed)")
	f.BoolVar(&o.json, "json", false, `print one JSON object at the end instead of streaming text: {"prompt_ids": [...], "ids": [...], "text": "..."} (the prompt's token ids, the generated ids, the generated text)`)
	f.BoolVar(&o.stats, "stats", false, "print time to first token, time per output token and tokens/s to stderr at the end; with --servers also each hop's blocks, median round trip time t_cj (minus server compute) and median server compute per token")
	f.DurationVar(&o.stepTimeout, "step-timeout", client.DefaultStepTimeout, "with --servers or --bootstrap: how long a server may take to answer one step before the client fails over to another")
	f.DurationVar(&o.allocTimeout, "alloc-timeout", client.DefaultAllocTimeout, "with --servers or --bootstrap: how long a server may queue the session for attention-cache room")
	f.DurationVar(&o.failoverWait, "failover-wait", client.DefaultFailoverWait, "with --bootstrap: when a server fails and no other one hosts its blocks, how long the session waits for one to join (or move there) in the registry before it fails; 0 = fail at once")
	f.StringVar(&o.wireDType, "wire-dtype", "f32", "with --servers or --bootstrap: dtype of hidden states on the wire: f32 (exact), f16 or bf16 (half the bytes, rounded)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	return cmd
}

// runGenerate checks the flags, opens the model where the mode says and
// streams the generation to out.
func runGenerate(ctx context.Context, out, errOut io.Writer, o generateOptions) error {
	modes := 0
	for _, on := range []bool{o.local, len(o.servers) > 0, len(o.p2p.Bootstrap) > 0} {
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
	if err := o.resolveModel(ctx, errOut); err != nil {
		return err
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
	case len(o.p2p.Bootstrap) > 0:
		return openBootstrap(ctx, errOut, o)
	}
	return openLocal(o)
}

// openBootstrap joins the swarm as a client-only node, waits until the
// registry's SERVING servers cover the model, and returns a blockRunner
// whose Forwarder is a client session with the registry as its candidate
// source. The release function of openBackend leaves the swarm.
func openBootstrap(ctx context.Context, errOut io.Writer, o generateOptions) (blocks.Head, blockRunner, func() error, error) {
	switch {
	case o.wait <= 0:
		return nil, nil, nil, fmt.Errorf("%w: --wait %v, want > 0", errUsage, o.wait)
	case len(o.providers) > 0 && slices.Contains(o.providers, ""):
		return nil, nil, nil, fmt.Errorf("%w: --providers: empty provider name", errUsage)
	}
	if err := o.p2p.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.reg.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	head, dtype, err := openClientHead(o)
	if err != nil {
		return nil, nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := node.NewClient(wctx, o.p2p, o.reg, head, o.providers,
		client.WithStepTimeout(o.stepTimeout), client.WithAllocTimeout(o.allocTimeout), client.WithFailoverWait(o.failoverWait),
		client.WithWireDType(dtype), client.WithLogger(logger))
	if err != nil {
		if errors.Is(err, client.ErrBadOption) {
			return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, nil, nil, fmt.Errorf("generate: %w (--wait %v)", err, o.wait)
	}
	return head, sessionRunner(ctx, errOut, c.Client, o.stats), c.Close, nil
}

// sessionRunner returns a blockRunner opening a client session of c; with
// stats its release function prints each hop's measurements to errOut.
func sessionRunner(ctx context.Context, errOut io.Writer, c *client.Client, stats bool) blockRunner {
	return func(maxLength int) (blocks.Forwarder, func() error, error) {
		sess, err := c.Open(ctx, maxLength)
		if err != nil {
			return nil, nil, err
		}
		release := func() error {
			err := sess.Close()
			if stats {
				printHopStats(errOut, sess.Stats())
			}
			return err
		}
		return sess, release, nil
	}
}

// blockRunner returns a Forwarder over all blocks of the model for one
// generation of up to maxLength positions, and a function that releases it.
// --local runs a Session in this process; --servers/--bootstrap will return
// a client session over a chain of servers (the seam for the data plane).
type blockRunner = blocks.Runner

// openLocal loads the whole model in this process: the head (embeddings,
// final norm, LM head, tokenizer) and one engine for blocks [0, L).
func openLocal(o generateOptions) (blocks.Head, blockRunner, func() error, error) {
	m, err := local.Open(o.model, o.modelOptions()...)
	if err != nil {
		return nil, nil, nil, err
	}
	return m.Head, m.Run, m.Close, nil
}

// streamGeneration generates with blocks.GenerateText, writing the prompt
// and then each token's bytes to out as soon as it is sampled (out is
// unbuffered: one write per token) and a final newline, or with --json one
// object at the end.
func streamGeneration(ctx context.Context, out, errOut io.Writer, head blocks.Head, run blockRunner, sampler *blocks.Sampler, o generateOptions) error {
	text := out
	if o.json {
		text = io.Discard
	}
	started := false // the prompt was echoed: generation began
	c, err := blocks.GenerateText(ctx, head, run, o.prompt, o.maxTokens, sampler, func(piece string) error {
		started = true
		_, err := io.WriteString(text, piece)
		return err
	})
	if !started {
		if errors.Is(err, blocks.ErrNoTokenizer) {
			return fmt.Errorf("%w: %s: %w: pass --tokenizer PATH", errUsage, o.model, blocks.ErrNoTokenizer)
		} else if errors.Is(err, blocks.ErrArgument) {
			return fmt.Errorf("%w: %s: %w", errUsage, o.model, err)
		}
		return err
	}
	if _, werr := io.WriteString(text, "\n"); err == nil {
		err = werr
	}
	if o.json && err == nil {
		c.IDs = append([]int{}, c.IDs...)
		err = json.NewEncoder(out).Encode(c)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("generate: interrupted after %d tokens", len(c.IDs))
		}
		return err
	}
	if o.stats && len(c.IDs) > 0 {
		fmt.Fprintf(errOut, "prompt %d tokens, generated %d; TTFT %v, TPOT %v, %.1f tokens/s\n",
			len(c.PromptIDs), len(c.IDs), c.TTFT.Round(time.Microsecond), c.TPOT().Round(time.Microsecond),
			float64(len(c.IDs))/c.Total.Seconds())
	}
	return nil
}

// generateJSON is what `swarm generate --json` prints: prompt_ids, ids and
// text.
type generateJSON = blocks.Completion
