package blocks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// TestGenerateText: from the empty prompt, greedy, 200 tokens, the pieces
// streamed and the Completion's text are REFERENCE.md section 2 byte for
// byte, its ids section 3's; the runner is asked for exactly the positions
// needed. A prompt longer than the context and a head without a tokenizer
// are refused with ErrArgument before the runner is asked.
func TestGenerateText(t *testing.T) {
	ref := stories260KReference(t)
	l := stories260K(t)["gguf"]
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	asked := 0
	run := func(maxLength int) (blocks.Forwarder, func() error, error) {
		asked = maxLength
		s, err := l.engine.NewSession(l.engine.Span(), maxLength)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	var streamed strings.Builder
	c, err := blocks.GenerateText(context.Background(), l.head, run, "", 200, sampler, func(piece string) error {
		streamed.WriteString(piece)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []int{1}, c.PromptIDs)
	require.Equal(t, ref.ids[:200], c.IDs)
	require.Equal(t, ref.text, c.Text)
	require.Equal(t, ref.text, streamed.String(), "the echoed prompt (BOS alone) prints nothing")
	require.Equal(t, 200, asked, "BOS and 199 fed-back tokens")
	require.LessOrEqual(t, c.TTFT, c.Total)

	asked = 0
	long := strings.Repeat("Once upon a time ", 4*l.head.Info().MaxSeqLen/5) // ~4 tokens each: > the context
	_, err = blocks.GenerateText(context.Background(), l.head, run, long, 10, sampler, func(string) error { return nil })
	require.ErrorIs(t, err, blocks.ErrArgument)
	require.ErrorContains(t, err, fmt.Sprintf("the model's context is %d", l.head.Info().MaxSeqLen))
	require.Zero(t, asked)

	noTok, err := l.model.LoadHead() // a GGUF carries its tokenizer: strip it
	require.NoError(t, err)
	_, err = blocks.GenerateText(context.Background(), headWithoutTokenizer{noTok}, run, "x", 1, sampler, func(string) error { return nil })
	require.ErrorIs(t, err, blocks.ErrArgument)
	require.ErrorContains(t, err, "without a tokenizer")
}

// headWithoutTokenizer hides a head's tokenizer.
type headWithoutTokenizer struct{ blocks.Head }

func (headWithoutTokenizer) Tokenizer() tokenizer.Tokenizer { return nil }
