package ingress

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAccessLog_OneLinePerRequest serves two requests through AccessLog
// with a JSON logger: one that ran two generations (model, tokens summed,
// the first TTFT kept) with the client's request id, and one without a
// generation whose malformed id is replaced by a generated one.
func TestAccessLog_OneLinePerRequest(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := AccessLog(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			require.Equal(t, "req-42.a_b", RequestID(r.Context()))
			record(r.Context(), "stories260K", "chain", Result{PromptTokens: 7, CompletionTokens: 5, TTFT: 250 * time.Millisecond})
			record(r.Context(), "stories260K", "chain", Result{PromptTokens: 3, CompletionTokens: 2, TTFT: 900 * time.Millisecond})
			w.WriteHeader(http.StatusCreated)
			return
		}
		http.Error(w, "no such route", http.StatusNotFound)
	}))

	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req.Header.Set(RequestIDHeader, "req-42.a_b")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, "req-42.a_b", rec.Header().Get(RequestIDHeader))

	req = httptest.NewRequest(http.MethodGet, "/v1/nothing", nil)
	req.Header.Set(RequestIDHeader, "bad id with spaces")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	generated := rec.Header().Get(RequestIDHeader)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{16}$`), generated)

	// A poll of the state logs at Debug: not here.
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/state", nil))

	lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	require.Len(t, lines, 2, "one line per request: %s", logs.String())
	var first, second map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &first))
	require.NoError(t, json.Unmarshal(lines[1], &second))
	require.Equal(t, "request", first["msg"])
	require.Equal(t, "req-42.a_b", first["id"])
	require.Equal(t, "POST", first["method"])
	require.Equal(t, "/v1/chat/completions", first["route"])
	require.Equal(t, 201.0, first["status"])
	require.Equal(t, "stories260K", first["model"])
	require.Equal(t, "chain", first["via"])
	require.Equal(t, 10.0, first["prompt_tokens"], "7 + 3")
	require.Equal(t, 7.0, first["completion_tokens"], "5 + 2")
	require.Equal(t, 0.25, first["ttft"], "the first generation's")
	require.Contains(t, first, "latency")

	require.Equal(t, generated, second["id"])
	require.Equal(t, 404.0, second["status"])
	require.Equal(t, "/v1/nothing", second["route"])
	require.NotContains(t, second, "model", "no generation ran")
}
