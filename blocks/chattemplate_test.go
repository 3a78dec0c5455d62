package blocks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/testenv"
)

// TestChatTemplate reads templates from the metadata Open parsed: none in
// the stories260K GGUF and llama2.c files; the GGUF key
// tokenizer.chat_template; the string or the "default" entry of a Hugging
// Face tokenizer_config.json; a clear error for anything else.
func TestChatTemplate(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "stories260K.bin"} {
		m, err := blocks.Open(testenv.SharedFile(t, "models", "stories260K", name))
		require.NoError(t, err)
		src, err := m.ChatTemplate()
		require.NoError(t, err)
		require.Empty(t, src, name)
		require.NoError(t, m.Close())
	}

	const tpl = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
	c := synth.DefaultConfig()
	c.ChatTemplate = tpl
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synth.WriteGGUF(path, c))
	m, err := blocks.Open(path)
	require.NoError(t, err)
	defer m.Close()
	src, err := m.ChatTemplate()
	require.NoError(t, err)
	require.Equal(t, tpl, src)

	dir := filepath.Join(t.TempDir(), "hf")
	require.NoError(t, synth.WriteHF(dir, synth.DefaultConfig()))
	read := func(config string) (string, error) {
		t.Helper()
		if config != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(config), 0o644))
		}
		m, err := blocks.Open(dir)
		require.NoError(t, err)
		defer m.Close()
		return m.ChatTemplate()
	}
	src, err = read("")
	require.NoError(t, err)
	require.Empty(t, src, "no tokenizer_config.json")
	src, err = read(`{"chat_template": "{{ messages[0]['content'] }}"}`)
	require.NoError(t, err)
	require.Equal(t, "{{ messages[0]['content'] }}", src)
	src, err = read(`{"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": "y"}]}`)
	require.NoError(t, err)
	require.Equal(t, "y", src)
	_, err = read(`{"chat_template": 5}`)
	require.ErrorIs(t, err, blocks.ErrFormat)
	require.ErrorContains(t, err, "neither a string nor a list")
}
