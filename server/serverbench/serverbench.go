package serverbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/internal/flops"
	"github.com/swarmllm/swarm/internal/llamabench"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// ErrConfig marks a Config field out of range; the message names the flag.
var ErrConfig = errors.New("serverbench: bad config")

// Config is what one run measures; each field is a flag of `swarm bench
// server`.
type Config struct {
	// Model is the model path (--model) and Blocks the span served
	// (--blocks START:END).
	Model  string
	Blocks swarm.Span
	// Device is the server's engine backend (--device, server.Config.Device):
	// "" for the CPU.
	Device string
	// Concurrency lists the numbers of concurrent sessions to measure
	// (--concurrency 1,4,16), each >= 1.
	Concurrency []int
	// Tokens is the decode steps timed per session (--tokens), >= 1.
	Tokens int
	// Prompt is the prompt length each session prefills before its decode
	// steps (--prompt), >= 1.
	Prompt int
	// Warmup is the untimed decode steps each session runs first
	// (--warmup), >= 0.
	Warmup int
	// Prefill is the prompt length of the prefill comparison (--prefill); 0
	// skips it.
	Prefill int
	// MeasureCacheDir is the server's measurement cache (--measure-cache);
	// empty means the server's default.
	MeasureCacheDir string
	// LlamaBench is the path of clients/js/llama_bench.mjs
	// (llamabench.FindScript) for --vs-llama-cpp: after our measurements,
	// llama.cpp decodes the same GGUF file with one context of N sequences
	// for each N of Concurrency (the same Prompt and Tokens), with
	// GOMAXPROCS threads. Empty skips it. It needs Blocks to be the whole
	// model.
	LlamaBench string
}

// DefaultConfig returns the defaults: concurrency 1, 4 and 16, 64 tokens
// after an 8-token prompt and 2 warm-up steps, and a 512-token prefill.
func DefaultConfig() Config {
	return Config{Concurrency: []int{1, 4, 16}, Tokens: 64, Prompt: 8, Warmup: 2, Prefill: 512}
}

// Validate checks the fields that do not need the model.
func (c Config) Validate() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("%w: --model is required", ErrConfig)
	case c.Blocks.Empty():
		return fmt.Errorf("%w: --blocks START:END is required", ErrConfig)
	case len(c.Concurrency) == 0:
		return fmt.Errorf("%w: --concurrency needs at least one value", ErrConfig)
	case slices.Min(c.Concurrency) < 1:
		return fmt.Errorf("%w: --concurrency %v: each must be >= 1", ErrConfig, c.Concurrency)
	case c.Tokens < 1:
		return fmt.Errorf("%w: --tokens %d, want >= 1", ErrConfig, c.Tokens)
	case c.Prompt < 1:
		return fmt.Errorf("%w: --prompt %d, want >= 1", ErrConfig, c.Prompt)
	case c.Warmup < 0:
		return fmt.Errorf("%w: --warmup %d, want >= 0", ErrConfig, c.Warmup)
	case c.Prefill < 0:
		return fmt.Errorf("%w: --prefill %d, want >= 0", ErrConfig, c.Prefill)
	}
	return nil
}

// ParseConcurrency parses a comma-separated list of session counts such as
// "1,4,16".
func ParseConcurrency(s string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: concurrency %q: want positive integers separated by commas", ErrConfig, s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// Result is the measurement at one concurrency.
type Result struct {
	// Concurrency is the number of sessions decoding at the same time.
	Concurrency int `json:"concurrency"`
	// AggregateTokS is the decode steps of all sessions per second of wall
	// time, tokens/s.
	AggregateTokS float64 `json:"aggregate_tok_s"`
	// TPOT is the mean over sessions of a session's time per decode step,
	// seconds.
	TPOT float64 `json:"tpot_s"`
	// GFLOPs is AggregateTokS times the matrix FLOPs of one token through
	// the span (FLOPsPerToken), in 10^9 FLOP/s.
	GFLOPs float64 `json:"gflops"`
	// LlamaCppTokS is llama.cpp's aggregate decode tok/s with Concurrency
	// sequences of one context on the same file (--vs-llama-cpp), and
	// Ratio is AggregateTokS over it; both absent without it. llama.cpp's
	// steps include the LM head and sampling, ours only the blocks (the
	// bench sends synthetic hidden states), which favours ours by the LM
	// head's share of the weights.
	LlamaCppTokS float64 `json:"llama_cpp_aggregate_tok_s,omitempty"`
	Ratio        float64 `json:"ratio_vs_llama_cpp,omitempty"`
}

// Prefill compares a prompt computed in one step with the same prompt sent
// one token per step.
type Prefill struct {
	// Tokens is the prompt length.
	Tokens int `json:"tokens"`
	// BatchedTokS is prompt tokens per second sent as one step (the server
	// runs it in chunks of its batch budget through the batched path).
	BatchedTokS float64 `json:"batched_tok_s"`
	// DecodePathTokS is prompt tokens per second sent one token per step.
	DecodePathTokS float64 `json:"decode_path_tok_s"`
	// Speedup is BatchedTokS / DecodePathTokS.
	Speedup float64 `json:"speedup"`
	// BatchedGFLOPs is BatchedTokS times the matrix FLOPs of one token
	// through the span (FLOPsPerToken), 10^9 FLOP/s.
	BatchedGFLOPs float64 `json:"batched_gflops"`
}

// Report is the outcome of Run.
type Report struct {
	// Results holds one entry per Config.Concurrency value, in order.
	Results []Result `json:"results"`
	// Prefill is the prefill comparison; absent when Config.Prefill is 0.
	Prefill *Prefill `json:"prefill,omitempty"`
	// LlamaCpp is llama_bench.mjs's whole output with --vs-llama-cpp.
	LlamaCpp *llamabench.Result `json:"llama_cpp,omitempty"`
	// Device is the backend that computed the span (server Info's device:
	// "cpu", "cuda", ...).
	Device string `json:"device"`
	// Kernels names the CPU engine's compute kernels (blocks.Kernels).
	Kernels string `json:"kernels"`
	// PeakGFLOPs is this machine's peak float32 multiply-add rate on
	// GOMAXPROCS goroutines, measured before the runs (internal/flops,
	// `swarm bench flops`), 10^9 FLOP/s: the bound of every GFLOPs above
	// for the CPU backend. It is absent (0) for any other device, whose
	// bound that CPU figure is not.
	PeakGFLOPs float64 `json:"peak_gflops,omitempty"`
	// TauS is the server's own start-up measurement of the span (server
	// measure): the median decode step of one session, seconds per block
	// per token, with no websocket or step loop in it.
	TauS float64 `json:"tau_s"`
	// TauBatch is the same measurement for a ForwardBatch of b single-token
	// decode steps of b sessions, seconds per block per step (not per
	// token); absent for engines that do not batch.
	TauBatch []swarm.BatchTau `json:"tau_batch,omitempty"`
}

// FLOPsPerToken is the floating-point operations of the matrix products
// of one token through n blocks of a model described by info: 2 per
// multiply-add of the Q, K, V, O and the three feed-forward projections.
// Attention over the cache is left out (it grows with the position and is
// small at the lengths a bench runs).
func FLOPsPerToken(info swarm.ModelInfo, n int) float64 {
	d, q, kv, f := float64(info.DModel), float64(info.NHeads*info.HeadDim), float64(info.NKVHeads*info.HeadDim), float64(info.FFNDim)
	return 2 * float64(n) * (d*q + 2*d*kv + q*d + 3*d*f)
}

// Run starts a server for cfg.Model's span cfg.Blocks on loopback and
// measures it at each concurrency, then the prefill comparison, then (with
// cfg.LlamaBench, once our server is closed) llama.cpp on the same file.
// log receives the server's logs; nil discards them. Errors: ErrConfig
// (also when cfg.LlamaBench is set and cfg.Blocks is not the whole model),
// the server's, llamabench's.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	rep, err := measure(ctx, cfg, log)
	if err != nil || cfg.LlamaBench == "" {
		return rep, err
	}
	lr, err := llamabench.Run(ctx, cfg.LlamaBench, llamabench.Config{
		Model: cfg.Model, Threads: runtime.GOMAXPROCS(0), PromptTokens: cfg.Prompt, GenTokens: cfg.Tokens,
		Sequences: cfg.Concurrency, SeqPromptTokens: cfg.Prompt,
	})
	if err != nil {
		return rep, err
	}
	rep.LlamaCpp = &lr
	for i := range rep.Results {
		theirs := lr.Sequences[i].AggregateTokS
		rep.Results[i].LlamaCppTokS, rep.Results[i].Ratio = theirs, rep.Results[i].AggregateTokS/theirs
	}
	return rep, nil
}

// measure runs our server and its measurements.
func measure(ctx context.Context, cfg Config, log *slog.Logger) (Report, error) {
	sc := server.DefaultConfig()
	sc.Model, sc.Blocks, sc.MeasureCacheDir, sc.DrainTimeout = cfg.Model, cfg.Blocks, cfg.MeasureCacheDir, 0
	sc.Device = cfg.Device
	srv, err := server.New(ctx, sc, log)
	if err != nil {
		return Report{}, fmt.Errorf("serverbench: %w", err)
	}
	defer srv.Close()
	if n := srv.ModelInfo().NBlocks; cfg.LlamaBench != "" && (cfg.Blocks.Start != 0 || cfg.Blocks.End != n) {
		return Report{}, fmt.Errorf("%w: --vs-llama-cpp compares whole models: --blocks %d:%d, want 0:%d", ErrConfig, cfg.Blocks.Start, cfg.Blocks.End, n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, fmt.Errorf("serverbench: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(sctx, ln) })
	defer func() {
		stop()
		wg.Wait()
	}()
	b := bench{url: "ws://" + ln.Addr().String(), info: srv.ModelInfo(), span: cfg.Blocks}
	t := srv.Timing()
	rep := Report{Device: srv.Info().Device, Kernels: blocks.Kernels(), TauS: t.Tau, TauBatch: t.TauBatch}
	if rep.Device == blocks.CPUBackendName {
		fc := flops.DefaultConfig()
		fc.Threads = []int{runtime.GOMAXPROCS(0)}
		peak, err := flops.Measure(ctx, fc)
		if err != nil {
			return Report{}, fmt.Errorf("serverbench: peak: %w", err)
		}
		rep.PeakGFLOPs = peak.Peak() / 1e9
	}
	for _, n := range cfg.Concurrency {
		r, err := b.decode(ctx, n, cfg)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, r)
	}
	if cfg.Prefill > 0 {
		p, err := b.prefill(ctx, cfg.Prefill)
		if err != nil {
			return rep, err
		}
		rep.Prefill = &p
	}
	return rep, nil
}

// decode runs n sessions that prefill their prompts, warm up, then all
// start their timed decode steps together.
func (b bench) decode(ctx context.Context, n int, cfg Config) (Result, error) {
	maxLength := cfg.Prompt + cfg.Warmup + cfg.Tokens
	sessions := make([]*session, n)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.close()
			}
		}
	}()
	for i := range sessions {
		s, err := b.open(ctx, maxLength)
		if err != nil {
			return Result{}, err
		}
		sessions[i] = s
		if _, err := s.step(0, b.hidden(cfg.Prompt, i)); err != nil {
			return Result{}, err
		}
		for k := range cfg.Warmup {
			if _, err := s.step(cfg.Prompt+k, b.hidden(1, i+k)); err != nil {
				return Result{}, err
			}
		}
	}
	tpot := make([]float64, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			t0 := time.Now()
			pos := cfg.Prompt + cfg.Warmup
			for k := range cfg.Tokens {
				if _, err := s.step(pos+k, b.hidden(1, i+k)); err != nil {
					errs[i] = err
					return
				}
			}
			tpot[i] = time.Since(t0).Seconds() / float64(cfg.Tokens)
		})
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	var mean float64
	for _, v := range tpot {
		mean += v / float64(n)
	}
	agg := float64(n*cfg.Tokens) / wall
	return Result{
		Concurrency: n, AggregateTokS: agg, TPOT: mean,
		GFLOPs: agg * FLOPsPerToken(b.info, b.span.Len()) / 1e9,
	}, nil
}

// prefill times a prompt of n tokens sent as one step, then the same
// prompt one token per step, each on a fresh session.
func (b bench) prefill(ctx context.Context, n int) (Prefill, error) {
	x := b.hidden(n, 0)
	d := b.info.DModel
	timeIt := func(oneStep bool) (float64, error) {
		s, err := b.open(ctx, n)
		if err != nil {
			return 0, err
		}
		defer s.close()
		start := time.Now()
		if oneStep {
			_, err = s.step(0, x)
		} else {
			for p := 0; p < n && err == nil; p++ {
				_, err = s.step(p, x[p*d:(p+1)*d])
			}
		}
		return float64(n) / time.Since(start).Seconds(), err
	}
	batched, err := timeIt(true)
	if err != nil {
		return Prefill{}, err
	}
	decodePath, err := timeIt(false)
	if err != nil {
		return Prefill{}, err
	}
	return Prefill{
		Tokens: n, BatchedTokS: batched, DecodePathTokS: decodePath, Speedup: batched / decodePath,
		BatchedGFLOPs: batched * FLOPsPerToken(b.info, b.span.Len()) / 1e9,
	}, nil
}
