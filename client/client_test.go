package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
	"github.com/swarmllm/swarm/swarm"
)

// greedy returns a greedy sampler.
func greedy(t testing.TB) *blocks.Sampler {
	s, err := blocks.NewSampler(blocks.SamplerConfig{})
	require.NoError(t, err)
	return s
}

// generate streams maxTokens greedy tokens from the BOS token alone and
// returns the text; each(token) runs after every token.
func generate(t testing.TB, sess *client.Session, maxTokens int, each func(client.Token)) string {
	t.Helper()
	var b strings.Builder
	for tok, err := range sess.Generate(context.Background(), []int{1}, maxTokens, greedy(t)) {
		require.NoError(t, err)
		b.WriteString(tok.Text)
		if each != nil {
			each(tok)
		}
	}
	return b.String()
}

// TestChainReferenceText is the in-process twin of the end-to-end test:
// three servers over [0,2), [2,4), [4,5) and a client holding only the head
// generate llama2.c's reference text.
func TestChainReferenceText(t *testing.T) {
	model := stories(t, "stories260K.bin")
	var urls []string
	for _, span := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
		urls = append(urls, startServer(t, model, span, nil).url)
	}
	c, err := client.New(loadHead(t, model), urls)
	require.NoError(t, err)
	sess, err := c.Open(context.Background(), 200)
	require.NoError(t, err)
	defer sess.Close()
	require.Equal(t, referenceText(t), generate(t, sess, 200, nil))

	st := sess.Stats()
	require.Len(t, st.Hops, 3)
	for i, want := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
		require.Equal(t, want, st.Hops[i].Span)
		require.Equal(t, urls[i], st.Hops[i].Server)
		require.Len(t, st.Hops[i].RTTs, 200, "one t_cj sample per single-token step (the prompt is BOS alone)")
		require.Positive(t, st.Hops[i].RTT)
	}
	require.Equal(t, 200, st.Tokens)
	require.Zero(t, st.Failovers)
}

// TestChainFormats runs the reference generation with the GGUF copy on the
// servers, with the client holding the GGUF or the llama2.c head: servers
// and client need the same blocks, not the same file.
func TestChainFormats(t *testing.T) {
	gguf, bin := stories(t, "stories260K.gguf"), stories(t, "stories260K.bin")
	for name, files := range map[string][2]string{"gguf": {gguf, gguf}, "bin client, gguf servers": {bin, gguf}} {
		t.Run(name, func(t *testing.T) {
			var urls []string
			for _, span := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
				urls = append(urls, startServer(t, files[1], span, nil).url)
			}
			c, err := client.New(loadHead(t, files[0]), urls)
			require.NoError(t, err)
			sess, err := c.Open(context.Background(), 200)
			require.NoError(t, err)
			defer sess.Close()
			require.Equal(t, referenceText(t), generate(t, sess, 200, nil))
		})
	}
}

// TestWireDTypes runs the reference generation with hidden states rounded
// to f16 and bf16 on the wire (half the bytes of f32). For stories260K the
// greedy text still equals the reference with both: an observed property
// of this model and these 200 tokens, not a guarantee (rounding can flip a
// near-tie argmax); f32 is the exact default.
func TestWireDTypes(t *testing.T) {
	model := stories(t, "stories260K.bin")
	var urls []string
	for _, span := range []swarm.Span{{Start: 0, End: 2}, {Start: 2, End: 4}, {Start: 4, End: 5}} {
		urls = append(urls, startServer(t, model, span, nil).url)
	}
	ref := referenceText(t)
	for _, dt := range []swarm.DType{swarm.DTypeF16, swarm.DTypeBF16} {
		t.Run(dt.String(), func(t *testing.T) {
			c, err := client.New(loadHead(t, model), urls, client.WithWireDType(dt))
			require.NoError(t, err)
			sess, err := c.Open(context.Background(), 200)
			require.NoError(t, err)
			defer sess.Close()
			text := generate(t, sess, 200, nil)
			same := 0
			for same < min(len(text), len(ref)) && text[same] == ref[same] {
				same++
			}
			t.Logf("%s on the wire: %d of %d reference bytes agree", dt, same, len(ref))
			require.Equal(t, ref, text)
		})
	}
}
