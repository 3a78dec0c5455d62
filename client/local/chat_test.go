package local_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/client/chat"
	"github.com/swarmllm/swarm/client/local"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/internal/testenv"
)

// recorder is a blocks.Runner over a local model that keeps the hidden
// states of each generation's prefill: the embedded prompt the blocks see.
type recorder struct {
	m        *local.Model
	prefills [][]float32
}

func (r *recorder) run(maxLength int) (blocks.Forwarder, func() error, error) {
	fw, release, err := r.m.Run(maxLength)
	if err != nil {
		return nil, nil, err
	}
	return forwarder{fw, r}, release, nil
}

type forwarder struct {
	blocks.Forwarder
	r *recorder
}

func (f forwarder) Forward(ctx context.Context, pos int, hidden []float32, n int) ([]float32, error) {
	if pos == 0 {
		f.r.prefills = append(f.r.prefills, slices.Clone(hidden))
	}
	return f.Forwarder.Forward(ctx, pos, hidden, n)
}

// TestChatPromptIsTransformers is issue 11's local `swarm chat`: on a
// qwen3 and a gemma3 model synthesized with the real Qwen3 and Gemma 3
// tokenizers and chat templates, two turns of a chat.Session over a
// local.Chat. The prompt each turn's blocks see (its prefill's hidden
// states) must be the embedding of the ids transformers.js's
// apply_chat_template(tokenize=True) gives for the conversation so far
// (clients/js/tokenize_oracle.mjs), the second one holding the first
// turn's reply as the assistant's message.
func TestChatPromptIsTransformers(t *testing.T) {
	archs := []string{"qwen3", "gemma3"}
	type turn struct {
		messages []client.ChatMessage
		prefill  []float32
		reply    chat.Reply
	}
	turns := map[string][]turn{}
	heads := map[string]blocks.Head{}
	for _, arch := range archs {
		c := synth.DefaultConfig()
		c.Arch, c.Name, c.Layers, c.Tied = arch, "synth-"+arch, 2, true
		c, err := c.WithTokenizer(testenv.LenmlTokenizer(t, arch))
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), arch+".gguf")
		require.NoError(t, synth.WriteGGUF(path, c))
		m, err := local.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { m.Close() })
		require.NotEmpty(t, m.ChatTemplate, "the GGUF holds the tokenizer's chat template")
		rec := &recorder{m: m}
		b, err := local.NewChat(m.Head, rec.run, m.ChatTemplate)
		require.NoError(t, err)
		s, err := chat.New(b, chat.Config{System: "You are terse.", Sampling: client.Sampling{MaxTokens: 6}}) // greedy
		require.NoError(t, err)
		for _, msg := range []string{"Hello, 世界! What's 2+2?", "And in words?"} {
			before := s.Messages()
			var streamed strings.Builder
			r, err := s.Send(context.Background(), msg, &streamed)
			require.NoError(t, err)
			require.Equal(t, r.Text, streamed.String())
			require.True(t, utf8.ValidString(r.Text), "%q: the oracle's JSON would change invalid UTF-8", r.Text)
			require.Contains(t, []string{"stop", "length"}, r.FinishReason)
			turns[arch] = append(turns[arch], turn{messages: append(before, client.ChatMessage{Role: "user", Content: msg}),
				prefill: rec.prefills[len(rec.prefills)-1], reply: r})
		}
		require.Len(t, rec.prefills, 2, "one prefill per turn")
		require.NotEmpty(t, turns[arch][0].reply.Text)
		require.Equal(t, turns[arch][0].reply.Text, turns[arch][1].messages[2].Content, "the second turn holds the first reply")
		heads[arch] = m.Head
	}

	var oracle map[string]struct {
		Chats []struct {
			IDs []int `json:"ids"`
		} `json:"chats"`
	}
	for i, arch := range archs {
		// One oracle run per model: each model's conversation holds its
		// own replies.
		var chats []map[string]any
		for _, tr := range turns[arch] {
			chats = append(chats, map[string]any{"messages": tr.messages, "add_generation_prompt": true})
		}
		testenv.NodeOracle(t, "tokenize_oracle.mjs", map[string]any{"models": archs[i : i+1], "texts": []string{}, "chats": chats}, &oracle)
		t.Run(arch, func(t *testing.T) {
			want := oracle[arch].Chats
			require.Len(t, want, 2)
			for k, tr := range turns[arch] {
				require.Equal(t, len(want[k].IDs), tr.reply.Usage.PromptTokens, "turn %d", k)
				emb, err := heads[arch].Embed(want[k].IDs)
				require.NoError(t, err)
				require.Equal(t, emb, tr.prefill, "turn %d: the blocks saw the embedding of transformers' ids", k)
			}
			require.Greater(t, len(want[1].IDs), len(want[0].IDs))
		})
	}
}

// TestChatPlainFallback: stories260K has no chat template; a local chat
// uses swarm proxy's plain fallback, as client/chat's TestSession sees it
// through the proxy: one empty user message is the empty prompt (BOS
// alone), whose greedy continuation is REFERENCE.md section 2's text; the
// next turn continues the conversation joined by "\n" as a completion of
// that text does. A conversation longer than the context is refused
// (chat.ErrRefused) and leaves the conversation as it was.
func TestChatPlainFallback(t *testing.T) {
	model, tok := ingresstest.Stories(t)
	m, err := local.Open(model, blocks.WithTokenizer(tok))
	require.NoError(t, err)
	defer m.Close()
	require.Empty(t, m.ChatTemplate)
	b, err := local.NewChat(m.Head, m.Run, m.ChatTemplate)
	require.NoError(t, err)
	zero := int64(0)
	s, err := chat.New(b, chat.Config{Sampling: client.Sampling{MaxTokens: 200, Seed: &zero}})
	require.NoError(t, err)
	ctx := context.Background()
	var streamed strings.Builder
	r, err := s.Send(ctx, "", &streamed)
	require.NoError(t, err)
	want := ingresstest.ReferenceText(t)
	require.Equal(t, want, r.Text)
	require.Equal(t, want, streamed.String())
	require.Equal(t, "length", r.FinishReason)
	require.Equal(t, &client.IngressUsage{PromptTokens: 1, CompletionTokens: 200, TotalTokens: 201}, r.Usage)

	s2, err := chat.New(b, chat.Config{System: "Once upon a time", Sampling: client.Sampling{MaxTokens: 12, Seed: &zero}})
	require.NoError(t, err)
	r, err = s2.Send(ctx, "Lily", &streamed)
	require.NoError(t, err)
	sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	c, err := blocks.GenerateText(ctx, m.Head, m.Run, "Once upon a time\nLily", 12, sampler, func(string) error { return nil })
	require.NoError(t, err)
	require.Equal(t, c.Text, r.Text)
	require.Equal(t, len(c.PromptIDs), r.Usage.PromptTokens)

	before := s2.Messages()
	_, err = s2.Send(ctx, strings.Repeat("Lily and Ben went to the park. ", 200), &streamed)
	require.ErrorIs(t, err, chat.ErrRefused)
	require.ErrorContains(t, err, "more than the model's context of 512")
	require.Equal(t, before, s2.Messages())
	// Run reports the refusal and goes on with the next message.
	var out, errOut strings.Builder
	s2.Reset()
	require.NoError(t, s2.Run(ctx, strings.NewReader(strings.Repeat("Lily and Ben went to the park. ", 200)+"\nLily\n"), &out, &errOut, ""))
	require.Equal(t, "\n"+c.Text+"\n", out.String())
	require.Regexp(t, `^chat: message refused: the conversation has \d+ tokens, more than the model's context of 512: /reset to start a new one\n$`, errOut.String())

	_, err = local.NewChat(m.Head, m.Run, "{% if %}")
	require.Error(t, err)
	noTok, err := local.Open(model)
	require.NoError(t, err)
	defer noTok.Close()
	_, err = local.NewChat(noTok.Head, noTok.Run, "")
	require.ErrorIs(t, err, client.ErrBadOption)
	require.ErrorIs(t, err, blocks.ErrNoTokenizer)
}
