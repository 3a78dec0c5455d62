// Package llamabench runs llama.cpp's side of the side-by-side benchmarks:
// clients/js/llama_bench.mjs (node-llama-cpp 3.22.1 and its prebuilt CPU
// build of llama.cpp) on a GGUF file, and decodes the one JSON line it
// prints. `swarm bench local --vs-llama-cpp` (internal/enginebench) and
// `swarm bench server --vs-llama-cpp` (server/serverbench) use it.
//
// It is a leaf: this package must never import another package of this
// repository.
package llamabench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnavailable marks a missing piece of the llama.cpp side: node, the
// script or the node-llama-cpp package. The message says what to install.
var ErrUnavailable = errors.New("llamabench: llama.cpp is not available")

// Script is the script's path relative to the repository root.
const Script = "clients/js/llama_bench.mjs"

// Config is one run of the script; each field is one of its flags.
type Config struct {
	// Model is the GGUF file (--model).
	Model string
	// Threads is llama.cpp's thread count (--threads), >= 1.
	Threads int
	// PromptTokens is the prefill prompt's length (--prompt-tokens) and
	// GenTokens the decode steps timed (--gen-tokens), each >= 1.
	PromptTokens, GenTokens int
	// Sequences lists the numbers of sequences decoding at once
	// (--sequences); empty skips that part.
	Sequences []int
	// SeqPromptTokens is the prompt each of those sequences prefills
	// first (--seq-prompt-tokens); 0 means the script's default (8).
	SeqPromptTokens int
}

// SeqResult is llama.cpp's aggregate decode rate with N sequences of one
// context decoding at once.
type SeqResult struct {
	// Sequences is N.
	Sequences int `json:"sequences"`
	// AggregateTokS is N*gen_tokens per second of wall time, tokens/s.
	AggregateTokS float64 `json:"aggregate_tok_s"`
}

// Result is what the script prints (its header comment documents each
// figure).
type Result struct {
	Engine  string `json:"engine"`
	Threads int    `json:"threads"`
	// LoadS is loadModel's time, seconds.
	LoadS float64 `json:"load_s"`
	// PrefillTokS is prompt tokens per second of one P-token evaluation.
	PromptTokens int     `json:"prompt_tokens"`
	PrefillTokS  float64 `json:"prefill_tok_s"`
	// DecodeTokS is greedy single-sequence decode steps per second.
	GenTokens  int         `json:"gen_tokens"`
	DecodeTokS float64     `json:"decode_tok_s"`
	Sequences  []SeqResult `json:"sequences"`
}

// FindScript returns the path of llama_bench.mjs: script itself when not
// empty, else Script under the first directory from dir upward that holds
// it. It checks that node is on PATH and that node-llama-cpp is installed
// beside the script; each missing piece is an ErrUnavailable naming it.
func FindScript(dir, script string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: node is not on PATH (install Node.js 20+): %w", ErrUnavailable, err)
	}
	if script == "" {
		for d := dir; ; d = filepath.Dir(d) {
			p := filepath.Join(d, filepath.FromSlash(Script))
			if _, err := os.Stat(p); err == nil {
				script = p
				break
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("%w: %s not found in %s or any directory above it (run from the repository, or give the script's path)", ErrUnavailable, Script, dir)
			}
		}
	} else if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	pkg := filepath.Join(filepath.Dir(script), "node_modules", "node-llama-cpp", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		return "", fmt.Errorf("%w: node-llama-cpp is not installed beside %s (run npm ci in %s): %w",
			ErrUnavailable, script, filepath.Dir(script), err)
	}
	return script, nil
}

// Args returns the script's command-line flags for cfg.
func (c Config) Args() []string {
	args := []string{"--model", c.Model, "--threads", strconv.Itoa(c.Threads),
		"--prompt-tokens", strconv.Itoa(c.PromptTokens), "--gen-tokens", strconv.Itoa(c.GenTokens)}
	if len(c.Sequences) > 0 {
		s := make([]string, len(c.Sequences))
		for i, n := range c.Sequences {
			s[i] = strconv.Itoa(n)
		}
		args = append(args, "--sequences", strings.Join(s, ","))
	}
	if c.SeqPromptTokens > 0 {
		args = append(args, "--seq-prompt-tokens", strconv.Itoa(c.SeqPromptTokens))
	}
	return args
}

// Run runs `node script ARGS` (script from FindScript) and decodes its
// JSON line. Errors: the script failed (its stderr is in the message), or
// printed no JSON of Result's shape, or a figure is not positive.
func Run(ctx context.Context, script string, cfg Config) (Result, error) {
	abs, err := filepath.Abs(cfg.Model)
	if err != nil {
		return Result{}, fmt.Errorf("llamabench: model path %q: %w", cfg.Model, err)
	}
	cfg.Model = abs
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, cfg.Args()...)...)
	cmd.Dir = filepath.Dir(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("llamabench: node %s: %w: %s", filepath.Base(script), err, strings.TrimSpace(stderr.String()))
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return Result{}, fmt.Errorf("llamabench: %s printed %q, not its JSON line: %w", filepath.Base(script), out, err)
	}
	if r.LoadS <= 0 || r.PrefillTokS <= 0 || r.DecodeTokS <= 0 || len(r.Sequences) != len(cfg.Sequences) {
		return Result{}, fmt.Errorf("llamabench: %s printed incomplete figures: %s", filepath.Base(script), out)
	}
	return r, nil
}
