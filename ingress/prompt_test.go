package ingress

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/internal/testenv"
)

// TestEncodePromptSentencePiece: with a llama2.c tokenizer, which reads
// "<s>" in text as characters, a rendered chat's leading BOS text becomes
// the BOS id, a rendering without it gets no BOS (add_special_tokens=False)
// and plain text gets BOS on the first call only. Ids from stories260K's
// REFERENCE.md: "Once upon a time" -> [1, 403, 407, 261, 378].
func TestEncodePromptSentencePiece(t *testing.T) {
	tok, err := tokenizer.Load(testenv.SharedFile(t, "models", "stories260K", "tok512.bin"))
	require.NoError(t, err)
	for _, tc := range []struct {
		text            string
		rendered, first bool
		want            []int
	}{
		{"<s>Once upon a time", true, true, []int{1, 403, 407, 261, 378}},
		{"Once upon a time", true, true, []int{403, 407, 261, 378}},
		{"Once upon a time", false, true, []int{1, 403, 407, 261, 378}},
		{"Once upon a time", false, false, []int{403, 407, 261, 378}},
	} {
		got, err := EncodePrompt(tok, "<s>", tc.text, tc.rendered, tc.first)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%q rendered %v first %v", tc.text, tc.rendered, tc.first)
	}
	require.Equal(t, "[INST] hi", replicaPrompt("<s>", "<s>[INST] hi", true))
	require.Equal(t, "<s>[INST] hi", replicaPrompt("<s>", "<s>[INST] hi", false))
	require.Equal(t, "<|im_start|>user", replicaPrompt("", "<|im_start|>user", true))
}
