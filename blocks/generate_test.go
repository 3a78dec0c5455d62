package blocks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// endOfTurnTokenizer is the model's real tokenizer with an end-of-turn id
// of a chat model added to its end-of-generation set (the tiny synthetic
// vocabulary has no <|eot_id|>).
type endOfTurnTokenizer struct {
	tokenizer.Tokenizer
	eog []int
}

func (t endOfTurnTokenizer) EndOfGeneration() []int { return t.eog }

// endOfTurnHead hands out endOfTurnTokenizer.
type endOfTurnHead struct {
	*scriptedHead
	tok tokenizer.Tokenizer
}

func (h endOfTurnHead) Tokenizer() tokenizer.Tokenizer { return h.tok }

// TestGenerateStopsAtEndOfGeneration: Generate stops at every id of the
// tokenizer's end-of-generation set, not only BOS and EOS, and no longer
// at BOS when the set leaves it out (byte-level BPE models).
func TestGenerateStopsAtEndOfGeneration(t *testing.T) {
	l := tinyModel(t)
	require.Equal(t, []int{1, 2}, blocks.EndOfGeneration(l.head), "a SentencePiece model ends at BOS and EOS")
	prompt := []int{300, 301} // no BOS: as Qwen's Encode gives it
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		script []int
		want   []int
	}{
		{"end of turn", []int{10, 11, 7, 12}, []int{10, 11}},
		{"second end id", []int{10, 9, 12}, []int{10}},
		{"BOS is text here", []int{10, 1, 7}, []int{10, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := l.engine.NewSession(l.engine.Span(), 16)
			require.NoError(t, err)
			defer s.Close()
			head := endOfTurnHead{
				scriptedHead: &scriptedHead{Head: l.head, script: tc.script},
				tok:          endOfTurnTokenizer{Tokenizer: l.head.Tokenizer(), eog: []int{2, 7, 9}},
			}
			require.Equal(t, []int{2, 7, 9}, blocks.EndOfGeneration(head))
			ids, err := blocks.Generate(context.Background(), head, s, prompt, 8, sampler, func(int, int) error { return nil })
			require.NoError(t, err)
			require.Equal(t, tc.want, ids)
		})
	}
}
