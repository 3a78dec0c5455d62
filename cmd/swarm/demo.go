package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/hub"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/node"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm/p2p"
)

const demoLong = `demo runs a small swarm on this machine and generates a story through it:

 1. it finds the default model, stories260K (Karpathy's TinyStories Llama 2,
    5 blocks), in $SWARM_MODELS or ../shared/models, else in the user cache,
    else downloads it once from the Hugging Face hub (karpathy/tinyllamas;
    HF_ENDPOINT is honoured) with a progress bar and checksums;
 2. it starts 3 real ` + "`swarm serve --blocks auto`" + ` processes on 127.0.0.1, one after
    another, with ports chosen by the OS: the first is the swarm's bootstrap
    node, the others join through it. Each measures itself, reads the
    registry and takes the span incremental CG-BP gives it for the memory
    it is given (room for 2, 2 and 1 blocks with one session of the model's
    whole context): blocks [0,2), then [2,4), then [4,5);
 3. this process becomes a client-only node of the swarm: it loads only the
    embeddings, LM head and tokenizer, fetches the registry, chooses the
    chain among the SERVING servers with WS-RR, and streams the story to
    stdout token by token;
 4. it prints each hop's round trip time and compute time, TTFT and TPOT to
    stderr and stops the servers (SIGTERM, then SIGKILL after 10 s).

No process is left behind: the servers also get SIGKILL if the demo dies
(Linux parent-death signal), and Ctrl-C stops them too.

Examples:
  swarm demo
  swarm demo --temperature 0 --max-tokens 200 --prompt ""
  swarm demo --prompt "Lily had a cat" --seed 42`

// demoBlocks are the blocks each demo server has memory for (with R = 1
// session of the model's whole context); placement gives them [0,2),
// [2,4) and [4,5) of stories260K's 5 blocks.
var demoBlocks = []int{2, 2, 1}

// demoJoinSettle is the servers' --join-settle: they start one after
// another, so none needs to wait for a concurrent joiner.
const demoJoinSettle = 300 * time.Millisecond

// demoStopTimeout is how long the demo waits for servers after SIGTERM
// before it sends SIGKILL.
const demoStopTimeout = 10 * time.Second

// demoOptions are the flags of `swarm demo`.
type demoOptions struct {
	prompt       string
	maxTokens    int
	temperature  float64
	topP         float64
	seed         uint64
	seedSet      bool
	startTimeout time.Duration
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [--prompt TEXT] [--max-tokens N] [--seed S]",
		Short: "Start 3 local servers over the default model and generate a story through them",
		Long:  demoLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	f.StringVar(&o.prompt, "prompt", "Once upon a time", "text the story starts with; empty starts from BOS alone")
	f.IntVar(&o.maxTokens, "max-tokens", 200, "most tokens to generate (the model's context is 512)")
	f.Float64Var(&o.temperature, "temperature", 0.8, "sampling temperature; 0 is greedy (the same story every time)")
	f.Float64Var(&o.topP, "top-p", 0.9, "nucleus sampling threshold; 0 or 1 is off")
	f.Uint64Var(&o.seed, "seed", 0, "random seed of the sampler (default: a random seed, printed)")
	f.DurationVar(&o.startTimeout, "start-timeout", time.Minute, "how long each server may take to load, measure and listen")
	return cmd
}

// runDemo resolves the model, starts the servers, generates and stops
// everything, whatever happens in between.
func runDemo(ctx context.Context, out, errOut io.Writer, o demoOptions) (err error) {
	if o.maxTokens < 1 {
		return fmt.Errorf("%w: --max-tokens %d, want >= 1", errUsage, o.maxTokens)
	}
	if !o.seedSet {
		o.seed = rand.Uint64()
	}
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{Temperature: o.temperature, TopP: o.topP, Seed: o.seed})
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	paths, err := hub.Resolve(ctx, hub.Stories260K, hub.OptionsFromEnv(os.Getenv, os.Stderr))
	if err != nil {
		return fmt.Errorf("demo: find the model: %w", err)
	}
	for _, p := range []*string{&paths.Model, &paths.Tokenizer} {
		if *p, err = filepath.Abs(*p); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	fmt.Fprintf(errOut, "swarm demo: model %s (%s, from %s)\n", paths.Model, hub.Stories260K.Name, paths.Source)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the swarm binary: %w", err)
	}

	servers := supervise.NewGroup("server", errOut, "swarm demo: server: ", demoStopTimeout)
	defer func() {
		if serr := servers.Stop(); serr != nil && err == nil {
			err = fmt.Errorf("demo: %w", serr)
		}
	}()
	m, err := blocks.Open(paths.Model, blocks.WithTokenizer(paths.Tokenizer))
	if err != nil {
		return err
	}
	info := m.Info()
	m.Close()
	var bootstrap []string
	for i, nb := range demoBlocks {
		// M_j = m_j (s_m + s_c) for R = 1 and the whole context: CG-BP line 1
		// gives the server nb blocks (paper 003 eq. 2 and Alg. 1).
		spec := launch.Serve{Model: paths.Model, Tokenizer: paths.Tokenizer, Memory: int64(nb) * (info.BlockBytes + info.CacheBytes(info.MaxSeqLen)),
			TargetSessions: 1, MaxLength: info.MaxSeqLen, Bootstrap: bootstrap, JoinSettle: demoJoinSettle, DrainTimeout: 5 * time.Second}
		s, err := spec.Start(ctx, servers, o.startTimeout, exe)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if i == 0 {
			bootstrap = s.Addrs
		}
		fmt.Fprintf(errOut, "swarm demo: server blocks %s pid %d %s\n", s.Span, s.Child.Cmd.Process.Pid, s.URL)
	}
	return demoGenerate(ctx, out, errOut, paths, bootstrap, sampler, o)
}

// demoGenerate is the client side of the demo: a client-only node of the
// swarm bootstrapping from the first server, head only, chain by WS-RR among
// the registry's SERVING servers, tokens streamed to out, stats to errOut.
func demoGenerate(ctx context.Context, out, errOut io.Writer, paths hub.Paths, bootstrap []string, sampler *blocks.Sampler, o demoOptions) error {
	m, err := blocks.Open(paths.Model, blocks.WithTokenizer(paths.Tokenizer))
	if err != nil {
		return err
	}
	head, err := m.LoadHead()
	m.Close()
	if err != nil {
		return err
	}
	tok := head.Tokenizer()
	prompt, err := tok.Encode(o.prompt, true)
	if err != nil {
		return fmt.Errorf("demo: encode the prompt: %w", err)
	}
	maxTokens := min(o.maxTokens, head.Info().MaxSeqLen-len(prompt)+1)
	if maxTokens < 1 {
		return fmt.Errorf("%w: the prompt has %d tokens, the model's context is %d", errUsage, len(prompt), head.Info().MaxSeqLen)
	}
	pc := p2p.DefaultConfig()
	pc.ListenAddrs, pc.Bootstrap = []string{"/ip4/127.0.0.1/tcp/0"}, bootstrap
	jctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := node.NewClient(jctx, pc, registry.DefaultConfig(), head, nil, client.WithLogger(logger))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer c.Close()
	fmt.Fprintf(errOut, "swarm demo: registry lists %d SERVING servers covering all %d blocks\n", len(c.Candidates.Servers()), head.Info().NBlocks)
	sess, err := c.Open(ctx, len(prompt)+maxTokens-1)
	if err != nil {
		return err
	}
	defer sess.Close()
	var chain []string
	for _, h := range sess.Chain() {
		chain = append(chain, fmt.Sprintf("%s [%s]", h.Server, h.Span))
	}
	fmt.Fprintf(errOut, "swarm demo: chain %s\n", strings.Join(chain, " -> "))
	if o.temperature == 0 {
		fmt.Fprintf(errOut, "swarm demo: greedy decoding (temperature 0), up to %d tokens\n", maxTokens)
	} else {
		fmt.Fprintf(errOut, "swarm demo: sampling at temperature %g, top-p %g, seed %d, up to %d tokens\n", o.temperature, o.topP, o.seed, maxTokens)
	}
	for i := 1; i < len(prompt); i++ {
		if _, err := io.WriteString(out, tok.Decode(prompt[i-1], prompt[i])); err != nil {
			return err
		}
	}
	n := 0
	for t, err := range sess.Generate(ctx, prompt, maxTokens, sampler) {
		if err != nil {
			io.WriteString(out, "\n")
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("demo: interrupted after %d tokens", n)
			}
			return fmt.Errorf("demo: %w", err)
		}
		n++
		if _, err := io.WriteString(out, t.Text); err != nil {
			return err
		}
	}
	io.WriteString(out, "\n")
	st := sess.Stats()
	printHopStats(errOut, st)
	fmt.Fprintf(errOut, "swarm demo: prompt %d tokens, generated %d; TTFT %v, TPOT %v\n",
		len(prompt), st.Tokens, st.TTFT.Round(time.Microsecond), st.TPOT.Round(time.Microsecond))
	return nil
}
