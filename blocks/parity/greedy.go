package parity

import (
	"context"
	"fmt"
	"slices"

	"github.com/swarmllm/swarm/blocks"
)

// GreedyReport is the outcome of Greedy.
type GreedyReport struct {
	// Model is the model's name (callers that opened a file may put its
	// path here); Prompt and Tokens the prompt text and the most tokens
	// generated.
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	Tokens int    `json:"tokens"`
	// Reference and Candidate are the backends' names.
	Reference string `json:"reference"`
	Candidate string `json:"candidate"`
	// RefIDs and CandIDs are the generated token ids (without the prompt
	// and the end-of-generation id); RefText and CandText their text.
	RefIDs   []int  `json:"reference_ids"`
	CandIDs  []int  `json:"candidate_ids"`
	RefText  string `json:"reference_text"`
	CandText string `json:"candidate_text"`
	// FirstDiff is the index of the first generated token that differs
	// (the shorter length when one is a prefix of the other), -1 when the
	// ids are identical.
	FirstDiff int `json:"first_diff"`
	// Pass is FirstDiff == -1.
	Pass bool `json:"pass"`
}

// Greedy generates up to nTokens tokens greedily (temperature 0) after
// prompt with m's head (it needs a tokenizer) and an engine over all of
// m's blocks, once on ref and once on cand, with blocks.GenerateText (the
// generation of `swarm generate --local`), and reports whether the token
// ids are identical. Errors are ErrOptions for nTokens < 1, the head's and
// engines' loading errors, and GenerateText's.
func Greedy(ctx context.Context, ref, cand blocks.Backend, m *blocks.Model, prompt string, nTokens int) (GreedyReport, error) {
	rep := GreedyReport{Model: m.Info().Name, Prompt: prompt, Tokens: nTokens, Reference: ref.Name(), Candidate: cand.Name()}
	if nTokens < 1 {
		return rep, fmt.Errorf("%w: greedy tokens %d, want >= 1", ErrOptions, nTokens)
	}
	head, err := m.LoadHead()
	if err != nil {
		return rep, fmt.Errorf("parity: greedy: %w", err)
	}
	refC, err := generate(ctx, ref, m, head, prompt, nTokens)
	if err != nil {
		return rep, fmt.Errorf("parity: greedy on the reference backend %s: %w", ref.Name(), err)
	}
	candC, err := generate(ctx, cand, m, head, prompt, nTokens)
	if err != nil {
		return rep, fmt.Errorf("parity: greedy on the candidate backend %s: %w", cand.Name(), err)
	}
	rep.RefIDs, rep.RefText = refC.IDs, refC.Text
	rep.CandIDs, rep.CandText = candC.IDs, candC.Text
	rep.FirstDiff = firstDiff(rep.RefIDs, rep.CandIDs)
	rep.Pass = rep.FirstDiff == -1
	return rep, nil
}

// generate runs blocks.GenerateText greedily on an engine of b over all
// blocks of m.
func generate(ctx context.Context, b blocks.Backend, m *blocks.Model, head blocks.Head, prompt string, nTokens int) (blocks.Completion, error) {
	e, err := m.LoadSpanWith(b, m.Info().Blocks())
	if err != nil {
		return blocks.Completion{}, err
	}
	defer e.Close()
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{}) // greedy
	if err != nil {
		return blocks.Completion{}, err
	}
	run := func(maxLength int) (blocks.Forwarder, func() error, error) {
		s, err := e.NewSession(e.Span(), maxLength)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	c, err := blocks.GenerateText(ctx, head, run, prompt, nTokens, sampler, func(string) error { return nil })
	c.IDs = slices.Clone(c.IDs)
	if c.IDs == nil {
		c.IDs = []int{}
	}
	return c, err
}

// firstDiff is the first index where a and b differ, -1 when they are
// equal.
func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
