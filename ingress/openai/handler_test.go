package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// startAPI serves the OpenAI API over a gateway on the given block servers.
func startAPI(t *testing.T, servers []string, configure func(*ingress.Config)) (*httptest.Server, *ingress.Gateway) {
	t.Helper()
	gw := ingresstest.Gateway(t, servers, nil, configure)
	h, err := openai.New(gw)
	require.NoError(t, err)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs, gw
}

// post sends a JSON body and returns the response.
func post(t *testing.T, url string, body any, header map[string]string) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return send(t, http.MethodPost, url, bytes.NewReader(b), h)
}

// send sends a request with the given headers and returns the response.
func send(t *testing.T, method, url string, body io.Reader, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads a server-sent-event stream into its data payloads.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var out []string
	for ev, err := range sse.Read(resp.Body, nil) {
		require.NoError(t, err)
		out = append(out, ev.Data)
	}
	return out
}

// TestCompletionsReference is REFERENCE.md section 2 through the OpenAI
// API: an empty prompt, temperature 0, max_tokens 200, over a chain of three
// in-process block servers, streamed and not.
func TestCompletionsReference(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 200}

	resp := post(t, hs.URL+"/v1/completions", body, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Regexp(t, `^chain: ws://127\.0\.0\.1:\d+/v1/inference 0:2 -> .* 4:5$`, resp.Header.Get(openai.RouteHeader))
	var c openai.Completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.Equal(t, "text_completion", c.Object)
	require.Regexp(t, `^cmpl-[0-9a-f]{24}$`, c.ID)
	require.Equal(t, "stories260K", c.Model)
	require.Len(t, c.Choices, 1)
	require.Equal(t, want, c.Choices[0].Text)
	require.Equal(t, "length", *c.Choices[0].FinishReason)
	usage, _ := json.Marshal(c.Usage)
	require.JSONEq(t, `{"prompt_tokens":1,"completion_tokens":200,"total_tokens":201}`, string(usage))

	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	evs := events(t, post(t, hs.URL+"/v1/completions", body, nil))
	require.Equal(t, "[DONE]", evs[len(evs)-1])
	var text strings.Builder
	for i, e := range evs[:len(evs)-2] {
		var ch map[string]any
		require.NoError(t, json.Unmarshal([]byte(e), &ch))
		require.Equal(t, "text_completion", ch["object"])
		require.Contains(t, ch, "usage")
		require.Nil(t, ch["usage"], "usage is null before the last chunk")
		choice := ch["choices"].([]any)[0].(map[string]any)
		text.WriteString(choice["text"].(string))
		if i < len(evs)-3 {
			require.Nil(t, choice["finish_reason"])
		} else {
			require.Equal(t, "length", choice["finish_reason"])
		}
	}
	require.Equal(t, want, text.String())
	require.JSONEq(t, `{"prompt_tokens":1,"completion_tokens":200,"total_tokens":201}`,
		string(mustField(t, evs[len(evs)-2], "usage")))
}

// mustField returns one field of a JSON object.
func mustField(t *testing.T, obj, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(obj), &m))
	return m[field]
}

// TestChatReference: with the plain fallback template (stories260K has no
// chat template) one empty user message is the empty prompt, so a greedy
// chat completion of 200 tokens is REFERENCE.md section 2's text.
func TestChatReference(t *testing.T) {
	want := ingresstest.ReferenceText(t)
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	body := map[string]any{"model": "stories260K", "messages": []map[string]any{{"role": "user", "content": ""}},
		"temperature": 0, "max_tokens": 200, "stream": true}
	evs := events(t, post(t, hs.URL+"/v1/chat/completions", body, nil))
	require.Equal(t, "[DONE]", evs[len(evs)-1])
	var first openai.ChatChunk
	require.NoError(t, json.Unmarshal([]byte(evs[0]), &first))
	require.Equal(t, "chat.completion.chunk", first.Object)
	require.Regexp(t, `^chatcmpl-[0-9a-f]{24}$`, first.ID)
	require.Equal(t, "assistant", first.Choices[0].Delta.Role)
	var text strings.Builder
	for _, e := range evs[1 : len(evs)-2] {
		var ch openai.ChatChunk
		require.NoError(t, json.Unmarshal([]byte(e), &ch))
		require.Equal(t, first.ID, ch.ID)
		require.Nil(t, ch.Choices[0].FinishReason)
		text.WriteString(*ch.Choices[0].Delta.Content)
	}
	require.Equal(t, want, text.String())
	var last openai.ChatChunk
	require.NoError(t, json.Unmarshal([]byte(evs[len(evs)-2]), &last))
	require.Equal(t, "length", *last.Choices[0].FinishReason)
	require.Nil(t, last.Choices[0].Delta.Content)

	body["stream"] = false
	resp := post(t, hs.URL+"/v1/chat/completions", body, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var c openai.ChatCompletion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.Equal(t, "chat.completion", c.Object)
	require.Equal(t, openai.ChatMessage{Role: "assistant", Content: want}, c.Choices[0].Message)
	require.Equal(t, "length", c.Choices[0].FinishReason)
	require.Equal(t, openai.Usage{PromptTokens: 1, CompletionTokens: 200, TotalTokens: 201}, c.Usage)
}

// TestStopSequences checks that the text ends right before the first stop
// sequence (one token or several), streamed and not, with finish_reason
// "stop", and that the stop text never appears.
func TestStopSequences(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	for _, stop := range []any{"Lily", []string{"red ball", "mom"}, []string{"zzz", "\n"}} {
		var first string
		switch s := stop.(type) {
		case string:
			first = s
		case []string:
			for _, x := range s {
				if i := strings.Index(ref, x); i >= 0 && (first == "" || i < strings.Index(ref, first)) {
					first = x
				}
			}
		}
		want := ref[:strings.Index(ref, first)]
		body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 200, "stop": stop}
		resp := post(t, hs.URL+"/v1/completions", body, nil)
		var c openai.Completion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
		require.Equal(t, want, c.Choices[0].Text, "stop %v", stop)
		require.Equal(t, "stop", *c.Choices[0].FinishReason)

		body["stream"] = true
		evs := events(t, post(t, hs.URL+"/v1/completions", body, nil))
		var text strings.Builder
		for _, e := range evs[:len(evs)-1] {
			var ch openai.Completion
			require.NoError(t, json.Unmarshal([]byte(e), &ch))
			text.WriteString(ch.Choices[0].Text)
		}
		require.Equal(t, want, text.String(), "stop %v", stop)
	}
}

// TestPromptAndSeed checks a non-empty prompt (the completion continues it)
// and that the same seed gives the same sampled text.
func TestPromptAndSeed(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	prompt := "Once upon a time, there was a little girl named Lily."
	resp := post(t, hs.URL+"/v1/completions", map[string]any{"model": "stories260K", "prompt": prompt, "temperature": 0, "max_tokens": 20}, nil)
	var c openai.Completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.True(t, strings.HasPrefix(ref[len(prompt):], c.Choices[0].Text), "greedy continuation of the reference's own start: %q", c.Choices[0].Text)
	require.NotEmpty(t, c.Choices[0].Text)

	texts := map[string]int{}
	for _, seed := range []int{7, 7, 8} {
		resp := post(t, hs.URL+"/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "temperature": 1, "top_p": 0.9, "max_tokens": 40, "seed": seed}, nil)
		var c openai.Completion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
		texts[c.Choices[0].Text]++
	}
	require.Len(t, texts, 2, "seed 7 twice gives one text, seed 8 another")
}

// TestErrors checks statuses and OpenAI's error JSON.
func TestErrors(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	half, _ := startAPI(t, []string{ingresstest.StartServer(t, swarmSpan(0, 3), nil).URL}, nil)
	tests := []struct {
		name   string
		url    string
		body   any
		status int
		code   string
		param  string
		msg    string
	}{
		{"unknown model", hs.URL + "/v1/completions", map[string]any{"model": "gpt-4", "prompt": ""}, 404, "model_not_found", "model", `"gpt-4"`},
		{"no model", hs.URL + "/v1/completions", map[string]any{"prompt": ""}, 400, "invalid_value", "model", "model is required"},
		{"n = 2", hs.URL + "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "n": 2}, 400, "invalid_value", "n", "n = 2 is not supported"},
		{"temperature", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "temperature": 3}, 400, "invalid_value", "temperature", "want 0 to 2"},
		{"five stops", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "stop": []string{"a", "b", "c", "d", "e"}}, 400, "invalid_value", "stop", "at most 4"},
		{"token prompt", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": []int{1, 2}}, 400, "invalid_value", "prompt", "token arrays are not supported"},
		{"bad role", hs.URL + "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, 400, "invalid_value", "messages[0].role", `role "robot"`},
		{"no messages", hs.URL + "/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{}}, 400, "invalid_value", "messages", "at least one"},
		{"max_tokens 0", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "max_tokens": 0}, 400, "invalid_value", "max_tokens", "want >= 1"},
		{"prompt longer than the context", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": strings.Repeat("Lily ", 600)}, 400, "invalid_request", "", "the model's context is 512"},
		{"no route", half.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "max_tokens": 5}, 503, "no_route", "", "no allowed server hosts blocks 3:5"},
		{"provider not allowed", hs.URL + "/v1/completions", map[string]any{"model": "stories260K", "prompt": "", "swarm_providers": []string{"acme"}}, 503, "no_route", "", `provider "" is not in the allowlist ["acme"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, tt.url, tt.body, nil)
			require.Equal(t, tt.status, resp.StatusCode)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			if tt.status == http.StatusServiceUnavailable {
				require.Equal(t, "1", resp.Header.Get("Retry-After"), "503: try again soon")
			} else {
				require.Empty(t, resp.Header.Get("Retry-After"))
			}
			var e openai.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.Equal(t, tt.code, *e.Error.Code)
			require.Contains(t, e.Error.Message, tt.msg)
			if tt.param != "" {
				require.Equal(t, tt.param, *e.Error.Param)
			}
		})
	}
	t.Run("bad JSON", func(t *testing.T) {
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader("{"))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 400, resp.StatusCode)
		b, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(b), "not the expected JSON")
	})
}

// TestAPIKeys checks 401 without or with a wrong key, and per-key usage.
func TestAPIKeys(t *testing.T) {
	keys, err := ingress.ParseKeys(strings.NewReader("# keys\nsk-alice-0123456789 alice\nsk-bob-0123456789\n"))
	require.NoError(t, err)
	hs, gw := startAPI(t, ingresstest.StartChain(t), func(c *ingress.Config) { c.Keys = keys })
	body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 7}
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer sk-nobody-000000"}, {"Authorization": "Basic x"}} {
		resp := post(t, hs.URL+"/v1/completions", body, h)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		require.Equal(t, "invalid_api_key", *e.Error.Code)
	}
	for range 2 {
		resp := post(t, hs.URL+"/v1/completions", body, map[string]string{"Authorization": "Bearer sk-alice-0123456789"})
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	require.Equal(t, ingress.Usage{Key: "alice", Requests: 2, PromptTokens: 2, CompletionTokens: 14, TotalTokens: 16}, gw.Usage("alice"))
	require.Equal(t, ingress.Usage{Key: "sk-bob-0..."}, gw.Usage("sk-bob-0..."))
	_ = context.Background()
}
