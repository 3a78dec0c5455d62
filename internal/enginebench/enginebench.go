package enginebench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client/local"
	"github.com/swarmllm/swarm/internal/llamabench"
	"github.com/swarmllm/swarm/internal/membw"
)

// ErrConfig marks a Config field out of range; the message names the flag.
var ErrConfig = errors.New("enginebench: bad config")

// Config is what one run measures; each field is a flag of `swarm bench
// local`.
type Config struct {
	// Model is the model file (--model); with VsLlamaCpp it must be GGUF.
	Model string
	// Rounds is the rounds per engine (--rounds), >= 1; medians are
	// reported.
	Rounds int
	// PromptTokens is the prefill prompt's length (--prompt-tokens) and
	// GenTokens the decode steps timed (--gen-tokens), each >= 1.
	PromptTokens, GenTokens int
	// Threads is the threads of both engines (--threads), >= 1. Ours runs
	// with GOMAXPROCS, which the caller sets to Threads before anything
	// starts the compute pool; Run refuses a mismatch.
	Threads int
	// LlamaBench is the path of llama_bench.mjs (llamabench.FindScript);
	// empty measures our engine alone (no --vs-llama-cpp).
	LlamaBench string
	// BandwidthSize is the buffer read by the bandwidth measurement
	// (--bandwidth-size), bytes; 0 skips it (and the fractions).
	BandwidthSize int64
}

// DefaultConfig returns the defaults: 5 rounds, a 127-token prompt, 64
// decode steps, 2 threads, a 1 GiB bandwidth buffer.
func DefaultConfig() Config {
	return Config{Rounds: 5, PromptTokens: 127, GenTokens: 64, Threads: 2, BandwidthSize: 1 << 30}
}

// Validate checks the fields that do not need the model.
func (c Config) Validate() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("%w: --model is required", ErrConfig)
	case c.Rounds < 1:
		return fmt.Errorf("%w: --rounds %d, want >= 1", ErrConfig, c.Rounds)
	case c.PromptTokens < 1:
		return fmt.Errorf("%w: --prompt-tokens %d, want >= 1", ErrConfig, c.PromptTokens)
	case c.GenTokens < 1:
		return fmt.Errorf("%w: --gen-tokens %d, want >= 1", ErrConfig, c.GenTokens)
	case c.Threads < 1:
		return fmt.Errorf("%w: --threads %d, want >= 1", ErrConfig, c.Threads)
	case c.BandwidthSize < 0:
		return fmt.Errorf("%w: --bandwidth-size %d, want >= 0", ErrConfig, c.BandwidthSize)
	}
	return nil
}

// Figures is one round of one engine, or the medians of its rounds.
type Figures struct {
	// LoadS is the time to load the model and be ready to compute,
	// seconds.
	LoadS float64 `json:"load_s"`
	// PrefillTokS is prompt tokens per second of one P-token prefill.
	PrefillTokS float64 `json:"prefill_tok_s"`
	// DecodeTokS is greedy single-token decode steps per second.
	DecodeTokS float64 `json:"decode_tok_s"`
	// BandwidthFraction is WeightBytesPerToken * DecodeTokS over the
	// measured read bandwidth; 0 when either is unknown.
	BandwidthFraction float64 `json:"bandwidth_fraction,omitempty"`
}

// EngineReport is one engine's rounds and their medians.
type EngineReport struct {
	// Engine is "swarm" or "llama.cpp".
	Engine string    `json:"engine"`
	Rounds []Figures `json:"rounds"`
	Median Figures   `json:"median"`
}

// Ratio is ours over theirs for each median: above 1 is faster for the
// rates, slower for LoadS.
type Ratio struct {
	LoadS       float64 `json:"load_s"`
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
}

// Report is the outcome of Run.
type Report struct {
	Model        string `json:"model"`
	Threads      int    `json:"threads"`
	PromptTokens int    `json:"prompt_tokens"`
	GenTokens    int    `json:"gen_tokens"`
	Rounds       int    `json:"rounds"`
	// WeightBytesPerToken is the bytes of weights one decode step reads,
	// as stored in the file: every tensor but the token embedding (one row
	// of it is read), which counts when it doubles as the LM head. 0 for
	// a file that is not GGUF.
	WeightBytesPerToken int64 `json:"weight_bytes_per_token"`
	// BandwidthGBs is the read bandwidth measured with Threads goroutines
	// (internal/membw), 10^9 bytes/s, through BandwidthKernel; 0 when
	// skipped.
	BandwidthGBs    float64      `json:"bandwidth_gb_s"`
	BandwidthKernel membw.Kernel `json:"bandwidth_kernel,omitempty"`
	// Kernels names our engine's compute kernels (blocks.Kernels).
	Kernels string       `json:"kernels"`
	Swarm   EngineReport `json:"swarm"`
	// LlamaCpp and Ratio are present with --vs-llama-cpp.
	LlamaCpp *EngineReport `json:"llama_cpp,omitempty"`
	Ratio    *Ratio        `json:"ratio,omitempty"`
}

// Theirs runs one round of the other engine; llamabench.Run in
// production, a fake in tests.
type Theirs func(ctx context.Context, cfg llamabench.Config) (llamabench.Result, error)

// Run measures cfg.Rounds rounds of our engine, interleaved with rounds of
// llama.cpp when cfg.LlamaBench is set, after measuring the read bandwidth
// with cfg.Threads goroutines. Errors: ErrConfig (including GOMAXPROCS
// differing from cfg.Threads), the model's load errors, llamabench's.
func Run(ctx context.Context, cfg Config) (Report, error) {
	var theirs Theirs
	if cfg.LlamaBench != "" {
		theirs = func(ctx context.Context, c llamabench.Config) (llamabench.Result, error) {
			return llamabench.Run(ctx, cfg.LlamaBench, c)
		}
	}
	return run(ctx, cfg, theirs)
}

func run(ctx context.Context, cfg Config, theirs Theirs) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if n := runtime.GOMAXPROCS(0); n != cfg.Threads {
		return Report{}, fmt.Errorf("%w: GOMAXPROCS is %d, want --threads %d (set it before loading anything)", ErrConfig, n, cfg.Threads)
	}
	rep := Report{Model: cfg.Model, Threads: cfg.Threads, PromptTokens: cfg.PromptTokens, GenTokens: cfg.GenTokens, Rounds: cfg.Rounds, Kernels: blocks.Kernels()}
	var err error
	if rep.WeightBytesPerToken, err = weightBytesPerToken(cfg.Model); err != nil {
		return rep, err
	}
	if cfg.BandwidthSize > 0 {
		bw, err := membw.Measure(ctx, membw.Config{Size: cfg.BandwidthSize, Threads: []int{cfg.Threads}, Passes: 3})
		if err != nil {
			return rep, err
		}
		rep.BandwidthGBs, rep.BandwidthKernel = bw.Best()/1e9, bw.Kernel
		runtime.GC()
		debug.FreeOSMemory()
	}
	rep.Swarm.Engine = "swarm"
	if theirs != nil {
		rep.LlamaCpp = &EngineReport{Engine: "llama.cpp"}
	}
	lc := llamabench.Config{Model: cfg.Model, Threads: cfg.Threads, PromptTokens: cfg.PromptTokens, GenTokens: cfg.GenTokens}
	for range cfg.Rounds {
		f, err := ours(ctx, cfg)
		if err != nil {
			return rep, err
		}
		rep.Swarm.Rounds = append(rep.Swarm.Rounds, rep.fraction(f))
		runtime.GC() // hand the weights back before the other engine loads its copy
		debug.FreeOSMemory()
		if theirs == nil {
			continue
		}
		r, err := theirs(ctx, lc)
		if err != nil {
			return rep, err
		}
		rep.LlamaCpp.Rounds = append(rep.LlamaCpp.Rounds, rep.fraction(Figures{LoadS: r.LoadS, PrefillTokS: r.PrefillTokS, DecodeTokS: r.DecodeTokS}))
	}
	rep.Swarm.Median = medians(rep.Swarm.Rounds)
	if l := rep.LlamaCpp; l != nil {
		l.Median = medians(l.Rounds)
		s := rep.Swarm.Median
		rep.Ratio = &Ratio{LoadS: s.LoadS / l.Median.LoadS, PrefillTokS: s.PrefillTokS / l.Median.PrefillTokS, DecodeTokS: s.DecodeTokS / l.Median.DecodeTokS}
	}
	return rep, nil
}

// fraction fills f.BandwidthFraction from the report's bytes per token and
// bandwidth.
func (r Report) fraction(f Figures) Figures {
	if r.WeightBytesPerToken > 0 && r.BandwidthGBs > 0 {
		f.BandwidthFraction = float64(r.WeightBytesPerToken) * f.DecodeTokS / (r.BandwidthGBs * 1e9)
	}
	return f
}

// ours runs one round of our engine: load, prefill, decode.
func ours(ctx context.Context, cfg Config) (Figures, error) {
	start := time.Now()
	m, err := local.Open(cfg.Model)
	if err != nil {
		return Figures{}, err
	}
	defer m.Close()
	load := time.Since(start).Seconds()
	fw, closeSession, err := m.Run(cfg.PromptTokens + cfg.GenTokens)
	if err != nil {
		return Figures{}, err
	}
	defer closeSession()
	info := m.Head.Info()
	// step runs tokens at pos through every block and the LM head and
	// returns the greedy next token.
	step := func(pos int, tokens []int) (int, error) {
		x, err := m.Head.Embed(tokens)
		if err != nil {
			return 0, err
		}
		y, err := fw.Forward(ctx, pos, x, len(tokens))
		if err != nil {
			return 0, err
		}
		logits, err := m.Head.Logits(y[(len(tokens)-1)*info.DModel:])
		if err != nil {
			return 0, err
		}
		return argmax(logits), nil
	}
	start = time.Now()
	tok, err := step(0, PromptIDs(cfg.PromptTokens, info.Vocab))
	if err != nil {
		return Figures{}, err
	}
	prefill := float64(cfg.PromptTokens) / time.Since(start).Seconds()
	start = time.Now()
	for i := range cfg.GenTokens {
		if tok, err = step(cfg.PromptTokens+i, []int{tok}); err != nil {
			return Figures{}, err
		}
	}
	decode := float64(cfg.GenTokens) / time.Since(start).Seconds()
	return Figures{LoadS: load, PrefillTokS: prefill, DecodeTokS: decode}, nil
}

// PromptIDs returns the synthetic prompt both engines evaluate: n ids
// 3 + 7919*i mod (vocab-3), skipping the three special tokens of a Llama
// vocabulary (clients/js/llama_bench.mjs uses the same formula).
func PromptIDs(n, vocab int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 3 + 7919*i%(vocab-3)
	}
	return ids
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// medians returns the median of each figure over rounds (the mean of the
// two middle values for an even count).
func medians(rounds []Figures) Figures {
	med := func(get func(Figures) float64) float64 {
		v := make([]float64, len(rounds))
		for i, f := range rounds {
			v[i] = get(f)
		}
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Figures{
		LoadS:             med(func(f Figures) float64 { return f.LoadS }),
		PrefillTokS:       med(func(f Figures) float64 { return f.PrefillTokS }),
		DecodeTokS:        med(func(f Figures) float64 { return f.DecodeTokS }),
		BandwidthFraction: med(func(f Figures) float64 { return f.BandwidthFraction }),
	}
}

// weightBytesPerToken sums the GGUF file's tensor bytes a decode step
// reads: all but token_embd.weight, which counts only when the file has no
// output.weight (a tied LM head). A path not ending in .gguf gives 0.
func weightBytesPerToken(path string) (int64, error) {
	if !strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return 0, nil
	}
	f, err := gguf.ParseGGUFFile(path, gguf.UseMMap(), gguf.SkipLargeMetadata())
	if err != nil {
		return 0, fmt.Errorf("enginebench: reading the tensor table of %s: %w", path, err)
	}
	var total, embd int64
	tied := true
	for _, t := range f.TensorInfos {
		b := int64(t.Bytes())
		switch t.Name {
		case "token_embd.weight":
			embd = b
			continue
		case "output.weight":
			tied = false
		}
		total += b
	}
	if tied {
		total += embd
	}
	return total, nil
}
