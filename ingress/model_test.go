package ingress_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
)

// TestLoadModel loads what the ingress serves: the head with its
// tokenizer, the BOS/EOS text and the chat template; a model without a
// tokenizer is a bad option.
func TestLoadModel(t *testing.T) {
	model, tok := ingresstest.Stories(t)
	m, err := ingress.LoadModel(model, tok)
	require.NoError(t, err)
	require.Equal(t, "stories260K", m.Name)
	require.Equal(t, "<s>", m.BOSText)
	require.Equal(t, "</s>", m.EOSText)
	require.Empty(t, m.ChatTemplate, "llama2.c checkpoints have no chat template")
	require.Positive(t, m.Created)

	_, err = ingress.LoadModel(model, "")
	require.ErrorIs(t, err, ingress.ErrBadOption)
	require.ErrorContains(t, err, "comes without a tokenizer")

	c := synth.DefaultConfig()
	c.ChatTemplate = "{{ bos_token }}{{ messages[0]['content'] }}"
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synth.WriteGGUF(path, c))
	m, err = ingress.LoadModel(path, "")
	require.NoError(t, err)
	require.Equal(t, c.ChatTemplate, m.ChatTemplate)
}
