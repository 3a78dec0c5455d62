package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	sse "github.com/tmaxmax/go-sse"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// benchOptions are the flags of `swarm proxy bench`.
type benchOptions struct {
	model       string
	tokenizer   string
	servers     []string
	proxyURL    string
	concurrency int
	rounds      int
	maxTokens   int
	prompt      string
	json        bool
}

func newProxyBenchCmd() *cobra.Command {
	o := benchOptions{concurrency: 50, rounds: 1, maxTokens: 32}
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
	f.IntVar(&o.concurrency, "concurrency", o.concurrency, "concurrent streaming requests per round")
	f.IntVar(&o.rounds, "rounds", o.rounds, "rounds of --concurrency requests per phase")
	f.IntVar(&o.maxTokens, "max-tokens", o.maxTokens, "tokens generated per request (greedy)")
	f.StringVar(&o.prompt, "prompt", "", "prompt of every request (empty: BOS alone)")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of the table")
	return cmd
}

// benchPhase is one phase's measurements.
type benchPhase struct {
	Name     string  `json:"name"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Tokens   int     `json:"tokens"`
	TTFTp50  float64 `json:"ttft_p50_seconds"`
	TTFTp99  float64 `json:"ttft_p99_seconds"`
	TPOT     float64 `json:"tpot_mean_seconds"`
	Wall     float64 `json:"wall_seconds"`
	FirstErr string  `json:"first_error,omitempty"`
}

// benchReport is the output of the command.
type benchReport struct {
	Concurrency  int        `json:"concurrency"`
	Rounds       int        `json:"rounds"`
	MaxTokens    int        `json:"max_tokens"`
	Direct       benchPhase `json:"direct"`
	Proxy        benchPhase `json:"proxy"`
	AddedTTFTp50 float64    `json:"added_ttft_p50_seconds"`
	AddedTTFTp99 float64    `json:"added_ttft_p99_seconds"`
}

// sample is one request's outcome.
type sample struct {
	ttft, total time.Duration
	tokens      int
	err         error
}

func runProxyBench(ctx context.Context, out io.Writer, o benchOptions) error {
	switch {
	case o.model == "":
		return fmt.Errorf("%w: --model is required", errUsage)
	case len(o.servers) == 0:
		return fmt.Errorf("%w: --servers is required (block servers covering all blocks)", errUsage)
	case o.concurrency < 1 || o.rounds < 1 || o.maxTokens < 1:
		return fmt.Errorf("%w: --concurrency, --rounds and --max-tokens must be >= 1", errUsage)
	}
	m, err := loadIngressModel(o.model, o.tokenizer)
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
		gw, err := newGateway(proxyOptions{models: []string{o.model}, tokenizers: nonEmpty(o.tokenizer), servers: o.servers,
			refresh: time.Second, maxRetries: 0, stepTimeout: client.DefaultStepTimeout, allocTimeout: client.DefaultAllocTimeout, wireDType: "f32"},
			slog.New(slog.DiscardHandler), nil)
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
	direct := func(ctx context.Context) sample {
		start := time.Now()
		var s sample
		sess, err := c.Open(ctx, len(prompt)+o.maxTokens-1)
		if err != nil {
			s.err = err
			return s
		}
		defer sess.Close()
		sampler, _ := blocks.NewSampler(blocks.SamplerConfig{})
		for tok, err := range sess.Generate(ctx, prompt, o.maxTokens, sampler) {
			if err != nil {
				s.err = err
				return s
			}
			if s.tokens == 0 {
				s.ttft = time.Since(start)
			}
			_ = tok
			s.tokens++
		}
		s.total = time.Since(start)
		return s
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency}}
	viaProxy := func(ctx context.Context) sample {
		start := time.Now()
		var s sample
		body, _ := json.Marshal(map[string]any{"model": m.Name, "prompt": o.prompt, "max_tokens": o.maxTokens, "temperature": 0, "stream": true})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxyURL+"/v1/completions", bytes.NewReader(body))
		if err != nil {
			s.err = err
			return s
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			s.err = err
			return s
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			s.err = fmt.Errorf("HTTP %s: %s", resp.Status, b)
			return s
		}
		for ev, err := range sse.Read(resp.Body, nil) {
			if err != nil {
				s.err = err
				return s
			}
			if ev.Data == "[DONE]" {
				break
			}
			var ch struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
				s.err = err
				return s
			}
			if len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
				if s.tokens == 0 {
					s.ttft = time.Since(start)
				}
				s.tokens++
			}
		}
		s.total = time.Since(start)
		return s
	}
	rep := benchReport{Concurrency: o.concurrency, Rounds: o.rounds, MaxTokens: o.maxTokens}
	// A warm-up request per phase: connections, measurement caches.
	_ = direct(ctx)
	_ = viaProxy(ctx)
	rep.Direct = runBenchPhase(ctx, "direct", o, direct)
	rep.Proxy = runBenchPhase(ctx, "proxy", o, viaProxy)
	rep.AddedTTFTp50 = rep.Proxy.TTFTp50 - rep.Direct.TTFTp50
	rep.AddedTTFTp99 = rep.Proxy.TTFTp99 - rep.Direct.TTFTp99
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	ms := func(s float64) string { return fmt.Sprintf("%9.2fms", s*1000) }
	fmt.Fprintf(out, "%d concurrent streaming requests x %d rounds, %d tokens each\n", o.concurrency, o.rounds, o.maxTokens)
	fmt.Fprintf(out, "%-8s %8s %7s %11s %11s %11s %9s\n", "phase", "requests", "errors", "TTFT p50", "TTFT p99", "TPOT mean", "wall")
	for _, p := range []benchPhase{rep.Direct, rep.Proxy} {
		fmt.Fprintf(out, "%-8s %8d %7d %11s %11s %11s %8.2fs\n", p.Name, p.Requests, p.Errors, ms(p.TTFTp50), ms(p.TTFTp99), ms(p.TPOT), p.Wall)
	}
	fmt.Fprintf(out, "added by the proxy: TTFT p50 %s, p99 %s\n", ms(rep.AddedTTFTp50), ms(rep.AddedTTFTp99))
	for _, p := range []benchPhase{rep.Direct, rep.Proxy} {
		if p.FirstErr != "" {
			fmt.Fprintf(out, "%s: first error: %s\n", p.Name, p.FirstErr)
		}
	}
	if rep.Direct.Errors+rep.Proxy.Errors > 0 {
		return fmt.Errorf("proxy bench: %d requests failed", rep.Direct.Errors+rep.Proxy.Errors)
	}
	return nil
}

// runBenchPhase runs rounds of concurrent requests and summarizes them.
func runBenchPhase(ctx context.Context, name string, o benchOptions, one func(context.Context) sample) benchPhase {
	p := benchPhase{Name: name}
	var all []sample
	start := time.Now()
	for range o.rounds {
		got := make([]sample, o.concurrency)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i] = one(ctx) })
		}
		wg.Wait()
		all = append(all, got...)
	}
	p.Wall = time.Since(start).Seconds()
	var ttfts []float64
	var tpotSum float64
	tpotN := 0
	for _, s := range all {
		p.Requests++
		if s.err != nil {
			p.Errors++
			if p.FirstErr == "" {
				p.FirstErr = s.err.Error()
			}
			continue
		}
		p.Tokens += s.tokens
		ttfts = append(ttfts, s.ttft.Seconds())
		if s.tokens > 1 {
			tpotSum += (s.total - s.ttft).Seconds() / float64(s.tokens-1)
			tpotN++
		}
	}
	slices.Sort(ttfts)
	p.TTFTp50, p.TTFTp99 = percentile(ttfts, 0.50), percentile(ttfts, 0.99)
	if tpotN > 0 {
		p.TPOT = tpotSum / float64(tpotN)
	}
	return p
}

// percentile returns the nearest-rank percentile q of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// nonEmpty returns []string{s}, or nil for "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
