package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestHugePromptRefusedUnread: with the model loaded as `swarm proxy`
// loads it (ingress.LoadModel: stories260K's context of 512 tokens bounds
// its prompt in bytes), a 7 MB prompt is refused with 400 after reading
// only the body limit, never tokenized; a prompt under the body limit but
// over the model's byte bound is refused before tokenizing; a prompt that
// fits goes through.
func TestHugePromptRefusedUnread(t *testing.T) {
	model, tok := ingresstest.Stories(t)
	m, err := ingress.LoadModel(model, tok)
	require.NoError(t, err)
	require.Positive(t, m.MaxPromptBytes)
	require.Less(t, m.MaxPromptBytes, 64<<10, "512 tokens of tok512's pieces")
	gw := ingresstest.Gateway(t, ingresstest.StartChain(t), nil, func(c *ingress.Config) { c.Models = []ingress.Model{m} })
	h, err := openai.New(gw)
	require.NoError(t, err)

	send := func(prompt string) (*httptest.ResponseRecorder, int) {
		b, err := json.Marshal(map[string]any{"model": "stories260K", "prompt": prompt, "max_tokens": 1})
		require.NoError(t, err)
		body := &countingReader{r: strings.NewReader(string(b))}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions", body))
		return rec, body.n
	}
	message := func(rec *httptest.ResponseRecorder) string {
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(rec.Body).Decode(&e))
		return e.Error.Message
	}

	huge := strings.Repeat("Once upon a time, ", 7<<20/18)
	rec, read := send(huge)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, message(rec), "more than the models' contexts can use")
	require.Less(t, read, 6*m.MaxPromptBytes+64<<10+4096, "only the body limit was read of %d bytes", len(huge))

	long := strings.Repeat("a", m.MaxPromptBytes+1)
	rec, _ = send(long)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, message(rec), "more than the model's context of 512 tokens can hold")

	rec, _ = send("Once upon a time")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}
