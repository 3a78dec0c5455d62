package openai_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// TestUnsupportedParameters: every parameter this API does not implement
// is a 400 naming it (code unsupported_parameter), never a 200 served
// without it; values of the implemented penalties out of OpenAI's ranges
// are 400 invalid_value.
func TestUnsupportedParameters(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	tool := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}
	tests := []struct {
		name   string
		chat   bool
		extra  map[string]any
		code   string
		param  string
		substr string
	}{
		{"json_schema without schema", false, map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}}, "invalid_value", "response_format.json_schema.schema", "is required"},
		{"json_schema keyword", true, map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "string", "format": "date"}}}}, "invalid_value", "response_format.json_schema.schema", `response_format.json_schema.schema: unsupported JSON schema: keyword "format" at # is not supported`},
		{"json_schema too long", true, map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"enum": []string{"abc"}}}}}, "invalid_value", "max_tokens", "shortest document takes 5 tokens"},
		{"json_schema unknown field", true, map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{}, "pattern": 1}}}, "invalid_value", "response_format.json_schema", `unknown field "pattern"`},
		{"response_format type", true, map[string]any{"response_format": map[string]any{"type": "grammar"}}, "unsupported_parameter", "response_format", `only "text", "json_object" and "json_schema"`},
		{"response_format string", true, map[string]any{"response_format": "json"}, "invalid_value", "response_format", `want {"type"`},
		{"tools", true, map[string]any{"tools": tool}, "unsupported_parameter", "tools", "tool calling"},
		{"tool_choice", true, map[string]any{"tool_choice": "auto"}, "unsupported_parameter", "tool_choice", "tool calling"},
		{"parallel_tool_calls", true, map[string]any{"parallel_tool_calls": false}, "unsupported_parameter", "parallel_tool_calls", "tool calling"},
		{"functions", true, map[string]any{"functions": []any{map[string]any{"name": "f"}}}, "unsupported_parameter", "functions", "function calling"},
		{"function_call", true, map[string]any{"function_call": "auto"}, "unsupported_parameter", "function_call", "function calling"},
		{"chat logprobs", true, map[string]any{"logprobs": true}, "unsupported_parameter", "logprobs", "log probabilities"},
		{"completion logprobs", false, map[string]any{"logprobs": 2}, "unsupported_parameter", "logprobs", "log probabilities"},
		{"top_logprobs", true, map[string]any{"top_logprobs": 3}, "unsupported_parameter", "top_logprobs", ""},
		{"audio modality", true, map[string]any{"modalities": []string{"text", "audio"}}, "unsupported_parameter", "modalities", "text only"},
		{"audio", true, map[string]any{"audio": map[string]any{"voice": "alloy"}}, "unsupported_parameter", "audio", ""},
		{"prediction", true, map[string]any{"prediction": map[string]any{"type": "content", "content": "x"}}, "unsupported_parameter", "prediction", ""},
		{"web_search_options", true, map[string]any{"web_search_options": map[string]any{}}, "unsupported_parameter", "web_search_options", ""},
		{"reasoning_effort", true, map[string]any{"reasoning_effort": "low"}, "unsupported_parameter", "reasoning_effort", ""},
		{"n", true, map[string]any{"n": 3}, "invalid_value", "n", "n = 3"},
		{"message tool_calls", true, map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c"}}}}}, "unsupported_parameter", "messages[0].tool_calls", "tool calling"},
		{"message tool_call_id", true, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "tool", "content": "1", "tool_call_id": "c"}}}, "unsupported_parameter", "messages[1].tool_call_id", ""},
		{"store", true, map[string]any{"store": true}, "unsupported_parameter", "store", "only store: false"},
		{"unknown chat field", true, map[string]any{"verbosity": "low", "min_p": 0.1}, "unsupported_parameter", "min_p", "unrecognized request argument"},
		{"chat field on completions", false, map[string]any{"messages": msgs}, "unsupported_parameter", "messages", "unrecognized"},
		{"legacy max_completion_tokens on completions", false, map[string]any{"max_completion_tokens": 3}, "unsupported_parameter", "max_completion_tokens", ""},
		{"presence_penalty", true, map[string]any{"presence_penalty": 2.5}, "invalid_value", "presence_penalty", "want -2 to 2"},
		{"frequency_penalty", false, map[string]any{"frequency_penalty": -3}, "invalid_value", "frequency_penalty", "want -2 to 2"},
		{"logit_bias key", true, map[string]any{"logit_bias": map[string]any{"hello": 1}}, "invalid_value", "logit_bias", `key "hello", want a token id 0 to 511`},
		{"logit_bias vocab", false, map[string]any{"logit_bias": map[string]any{"512": 1}}, "invalid_value", "logit_bias", "0 to 511"},
		{"logit_bias value", true, map[string]any{"logit_bias": map[string]any{"5": 101}}, "invalid_value", "logit_bias", "want -100 to 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"model": "stories260K", "max_tokens": 2}
			url := hs.URL + "/v1/completions"
			if tt.chat {
				body["messages"], url = msgs, hs.URL+"/v1/chat/completions"
			} else {
				body["prompt"] = ""
			}
			for k, v := range tt.extra {
				body[k] = v
			}
			resp := post(t, url, body, nil)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e openai.ErrorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Equal(t, tt.code, *e.Error.Code)
			require.Equal(t, tt.param, *e.Error.Param)
			require.Contains(t, e.Error.Message, tt.substr)
			if tt.code == "unsupported_parameter" {
				require.True(t, strings.HasPrefix(e.Error.Message, tt.param+" is not supported"), e.Error.Message)
			}
		})
	}

	// What is implemented, or has no effect to ignore, is served.
	for _, extra := range []map[string]any{
		{"response_format": map[string]any{"type": "text"}},
		{"tools": []any{}, "tool_choice": "none", "logprobs": false, "modalities": []string{"text"}},
		{"presence_penalty": 0, "frequency_penalty": 0, "logit_bias": map[string]any{}},
		{"messages": []any{map[string]any{"role": "assistant", "content": "hi", "tool_calls": []any{}, "refusal": nil, "name": "bot"}}},
		{"store": false, "service_tier": "auto", "metadata": map[string]any{"a": "b"}, "prompt_cache_key": "k", "safety_identifier": "u1", "user": "u1"},
	} {
		body := map[string]any{"model": "stories260K", "max_tokens": 2, "messages": msgs}
		for k, v := range extra {
			body[k] = v
		}
		resp := post(t, hs.URL+"/v1/chat/completions", body, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", extra)
	}
}

// TestPenaltiesThroughTheChain: logit_bias +100 on one token makes greedy
// decoding repeat it (its text worked out with the model's own tokenizer);
// -100 on the reference's first token changes the text; a presence or
// frequency penalty of 2 changes the 200-token reference text, and the same request gives the same
// text twice.
func TestPenaltiesThroughTheChain(t *testing.T) {
	ref := ingresstest.ReferenceText(t)
	hs, gw := startAPI(t, ingresstest.StartChain(t), nil)
	m, err := gw.Model("stories260K")
	require.NoError(t, err)
	tok, bos := m.Head.Tokenizer(), m.Head.Info().BOS
	complete := func(extra map[string]any) openai.Completion {
		body := map[string]any{"model": "stories260K", "prompt": "", "temperature": 0, "max_tokens": 30}
		for k, v := range extra {
			body[k] = v
		}
		resp := post(t, hs.URL+"/v1/completions", body, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var c openai.Completion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
		return c
	}

	const forced = 300
	c := complete(map[string]any{"logit_bias": map[string]any{"300": 100}, "max_tokens": 3})
	require.Equal(t, tok.Decode(bos, forced)+tok.Decode(forced, forced)+tok.Decode(forced, forced), c.Choices[0].Text)

	plain := complete(nil).Choices[0].Text
	require.True(t, strings.HasPrefix(ref, plain))
	first, err := tok.Encode(plain, false)
	require.NoError(t, err)
	banned := complete(map[string]any{"logit_bias": map[string]any{strconv.Itoa(first[0]): -100}}).Choices[0].Text
	require.NotEqual(t, plain[:4], banned[:min(4, len(banned))], "the first token is banned")

	for _, p := range []string{"presence_penalty", "frequency_penalty"} {
		a := complete(map[string]any{p: 2, "max_tokens": 200}).Choices[0].Text
		require.NotEqual(t, ref, a, p)
		require.Equal(t, a, complete(map[string]any{p: 2, "max_tokens": 200}).Choices[0].Text, p)
	}
}

// TestJSONObjectMode: response_format {"type": "json_object"} constrains
// decoding over the chain: sampled or greedy, chat or completion, the text
// is a JSON object closed within max_tokens (a 260K-parameter story model
// writes long strings: the constraint closes them in time); with "}"
// favoured by logit_bias the
// object closes at once, "{}", and the model must end there (finish_reason
// stop).
func TestJSONObjectMode(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	format := map[string]any{"type": "json_object"}
	for _, temp := range []float64{0, 1} {
		resp := post(t, hs.URL+"/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{map[string]any{"role": "user", "content": "Lily"}},
			"temperature": temp, "seed": 5, "max_tokens": 60, "response_format": format}, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var c openai.ChatCompletion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
		text := c.Choices[0].Message.Content
		prefix, closed := openai.JSONObjectPrefix(text)
		require.True(t, prefix && closed, "temperature %g: %q", temp, text)
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &obj), "%q", text)
		require.True(t, strings.HasPrefix(text, "{"), "%q", text)
		require.Greater(t, len(text), 20)
	}

	tok := ingresstest.Head(t).Tokenizer()
	brace := -1
	for id := range tok.VocabSize() {
		if tok.Decode(-1, id) == "}" {
			brace = id
		}
	}
	require.NotEqual(t, -1, brace, "the vocabulary has a \"}\" piece")
	resp := post(t, hs.URL+"/v1/completions", map[string]any{"model": "stories260K", "prompt": "Once", "temperature": 0, "max_tokens": 50,
		"response_format": format, "logit_bias": map[string]any{strconv.Itoa(brace): 100}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var c openai.Completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.Equal(t, "{}", c.Choices[0].Text)
	require.Equal(t, "stop", *c.Choices[0].FinishReason)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.Choices[0].Text), &obj))
}
