package petals_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/petals"
)

// postHTTP sends fields to POST /api/v1/generate as JSON (asJSON) or as a
// form, and returns the status and the reply.
func postHTTP(t *testing.T, base string, fields map[string]any, asJSON bool) (int, petals.HTTPReply) {
	t.Helper()
	var resp *http.Response
	var err error
	if asJSON {
		b, jerr := json.Marshal(fields)
		require.NoError(t, jerr)
		resp, err = http.Post(base+petals.HTTPPath, "application/json", bytes.NewReader(b))
	} else {
		form := url.Values{}
		for k, v := range fields {
			form.Set(k, strings.Trim(mustJSON(t, v), `"`))
		}
		resp, err = http.PostForm(base+petals.HTTPPath, form)
	}
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var r petals.HTTPReply
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return resp.StatusCode, r
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestHTTPGenerate: chat.petals.dev's POST /api/v1/generate, as JSON and as
// a form, gives the reference text greedily; max_length counts the input's
// tokens (BOS included) as Hugging Face's generate does.
func TestHTTPGenerate(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	base := start(t, ingresstest.StartChain(t))
	for _, asJSON := range []bool{true, false} {
		status, r := postHTTP(t, base, map[string]any{"model": "stories260K", "inputs": "", "max_new_tokens": 200, "do_sample": 0}, asJSON)
		require.Equal(t, http.StatusOK, status)
		require.True(t, r.OK, r.Traceback)
		require.Equal(t, ref, *r.Outputs, "json %v", asJSON)
	}

	// The reference's start, then what follows it: max_length = 1 (BOS) +
	// the input's tokens + 20 generates what max_new_tokens 20 does.
	_, a := postHTTP(t, base, map[string]any{"inputs": "Once upon a time", "max_new_tokens": 20}, true)
	require.True(t, a.OK, a.Traceback)
	require.True(t, strings.HasPrefix(ref[len("Once upon a time"):], *a.Outputs), "%q", *a.Outputs)
	require.NotEmpty(t, *a.Outputs)
	ids, err := ingresstest.Head(t).Tokenizer().Encode("Once upon a time", true)
	require.NoError(t, err)
	_, b := postHTTP(t, base, map[string]any{"inputs": "Once upon a time", "max_length": len(ids) + 20, "do_sample": "false"}, false)
	require.True(t, b.OK, b.Traceback)
	require.Equal(t, *a.Outputs, *b.Outputs)
	_, c := postHTTP(t, base, map[string]any{"inputs": "Once upon a time", "max_length": len(ids)}, true)
	require.True(t, c.OK, c.Traceback)
	require.Empty(t, *c.Outputs, "nothing left to generate")

	// Sampling with a seed repeats; another seed differs.
	texts := map[string]int{}
	for _, seed := range []int{3, 3, 4} {
		_, r := postHTTP(t, base, map[string]any{"inputs": "", "max_new_tokens": 40, "do_sample": 1, "temperature": 1, "top_p": 0.9, "top_k": 40, "seed": seed}, seed == 3)
		require.True(t, r.OK, r.Traceback)
		texts[*r.Outputs]++
	}
	require.Len(t, texts, 2)
}

// TestHTTPErrors: failures are {"ok": false, "traceback": ...} with status
// 200, as http_api.py answers; another method is a 405.
func TestHTTPErrors(t *testing.T) {
	base := start(t, ingresstest.StartChain(t))
	tests := []struct {
		name   string
		fields map[string]any
		want   string
	}{
		{"no length", map[string]any{"inputs": "a"}, "needs max_new_tokens or max_length"},
		{"unknown model", map[string]any{"model": "bloom", "max_new_tokens": 3}, `unknown_model: ingress: unknown model: "bloom"`},
		{"unknown model, nothing to generate", map[string]any{"model": "bloom", "max_new_tokens": 0}, "unknown_model"},
		{"bad do_sample", map[string]any{"max_new_tokens": 1, "do_sample": "yes"}, "do_sample yes"},
		{"bad number", map[string]any{"max_new_tokens": "many"}, `max_new_tokens "many", want a number`},
		{"fractional", map[string]any{"max_new_tokens": 1.5}, "want an integer"},
		{"bad temperature", map[string]any{"max_new_tokens": 1, "do_sample": 1, "temperature": -1}, "bad_request"},
		{"session_id", map[string]any{"max_new_tokens": 1, "session_id": "abc"}, "session_id is not supported"},
		{"too long", map[string]any{"max_new_tokens": 1, "inputs": strings.Repeat("Lily ", 600)}, "bad_request"},
	}
	for _, tt := range tests {
		for _, asJSON := range []bool{true, false} {
			status, r := postHTTP(t, base, tt.fields, asJSON)
			require.Equal(t, http.StatusOK, status, tt.name)
			require.False(t, r.OK, tt.name)
			require.Nil(t, r.Outputs, tt.name)
			require.Contains(t, r.Traceback, tt.want, "%s (json %v)", tt.name, asJSON)
		}
	}

	resp, err := http.Get(base + petals.HTTPPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))

	resp2, err := http.Post(base+petals.HTTPPath, "application/json", strings.NewReader("[1"))
	require.NoError(t, err)
	defer resp2.Body.Close()
	var r petals.HTTPReply
	require.NoError(t, json.NewDecoder(resp2.Body).Decode(&r))
	require.False(t, r.OK)
	require.Contains(t, r.Traceback, "not a JSON object")
}
