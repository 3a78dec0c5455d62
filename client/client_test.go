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
