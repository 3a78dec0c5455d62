package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/ingress/loadtest"
)

// benchOptions are the flags of `swarm proxy bench`.
type benchOptions struct {
	model     string
	tokenizer string
	servers   []string
	proxyURL  string
	load      loadtest.Config
	prompt    string
	json      bool
}

func newProxyBenchCmd() *cobra.Command {
	o := benchOptions{load: loadtest.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "bench --model PATH --servers URL,... [--proxy URL] [--concurrency N] [--max-tokens N]",
		Short: "Load-test the ingress: concurrent streaming requests through the proxy versus the client library",
		Long: `bench measures what the ingress adds. Against the same block servers it runs
--concurrency concurrent streaming generations (greedy, from --prompt, of
--max-tokens tokens), --rounds times, in two phases:

  direct  the client library in this process: client.New + Open +
          Session.Generate, each on its own session
  proxy   POST /v1/completions with "stream": true through the ingress: the
          proxy at --proxy, or (without --proxy) one started in this process
          on a loopback port over --servers

and reports, per phase, time to first token (from the start of the request
to its first token's text; routing and session opening included) p50 and
p99, mean time per output token, and the added latency of the proxy: the
difference of the p50 (and p99) TTFTs. With --json it prints one JSON object.

Run it against real servers, e.g.:
  swarm serve --model stories260K.bin --blocks 0:5 --listen 127.0.0.1:7001 &
  swarm proxy bench --model stories260K.bin --tokenizer tok512.bin --servers 127.0.0.1:7001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxyBench(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "model: a .gguf file, a llama2.c .bin checkpoint or a Hugging Face directory (required; only its head is loaded)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer file (a llama2.c checkpoint needs one)")
	f.StringSliceVar(&o.servers, "servers", nil, "comma-separated block servers covering all blocks (required)")
	f.StringVar(&o.proxyURL, "proxy", "", "base URL of a running `swarm proxy` over the same servers; empty starts one in this process")
	o.load.AddFlags(f)
	f.StringVar(&o.prompt, "prompt", "", "prompt of every request (empty: BOS alone)")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of the table")
	return cmd
}

func runProxyBench(ctx context.Context, out io.Writer, o benchOptions) error {
	switch {
	case o.model == "":
		return fmt.Errorf("%w: --model is required", errUsage)
	case len(o.servers) == 0:
		return fmt.Errorf("%w: --servers is required (block servers covering all blocks)", errUsage)
	case o.load.Concurrency < 1 || o.load.Rounds < 1 || o.load.MaxTokens < 1:
		return fmt.Errorf("%w: --concurrency, --rounds and --max-tokens must be >= 1", errUsage)
	}
	m, err := loadIngressModel(ctx, io.Discard, o.model, o.tokenizer)
	if err != nil {
		return err
	}
	prompt, err := m.Head.Tokenizer().Encode(o.prompt, true)
	if err != nil {
		return err
	}
	c, err := client.New(m.Head, o.servers)
	if err != nil {
		return fmt.Errorf("%w: --servers: %w", errUsage, err)
	}
	proxyURL := o.proxyURL
	if proxyURL == "" {
		gw, err := newGateway(ctx, io.Discard, proxyOptions{models: []string{o.model}, tokenizers: nonEmpty(o.tokenizer), servers: o.servers,
			refresh: time.Second, maxRetries: 0, stepTimeout: client.DefaultStepTimeout, allocTimeout: client.DefaultAllocTimeout, wireDType: "f32"},
			slog.New(slog.DiscardHandler), nil, "")
		if err != nil {
			return err
		}
		defer gw.Close()
		h, err := newProxyHandler(gw)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: h}
		go hs.Serve(ln)
		defer hs.Close()
		proxyURL = "http://" + ln.Addr().String()
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.load.Concurrency}}
	rep := loadtest.Compare(ctx, o.load, loadtest.Direct(c, prompt, o.load.MaxTokens),
		loadtest.Completions(hc, proxyURL, m.Name, o.prompt, o.load.MaxTokens))
	if o.json {
		return rep.WriteJSON(out)
	}
	if err := rep.WriteText(out); err != nil {
		return err
	}
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("proxy bench: %d requests failed", n)
	}
	return nil
}

// nonEmpty returns []string{s}, or nil for "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
