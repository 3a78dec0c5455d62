package openai_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// recipeSchema is a schema a 260K-parameter story model could never follow
// by itself: nested objects, an enum, numbers, a nullable string, arrays.
const recipeSchema = `{"type": "object", "properties": {
	"title": {"type": "string"},
	"servings": {"type": "integer"},
	"spicy": {"type": "boolean"},
	"course": {"enum": ["starter", "main", "dessert"]},
	"steps": {"type": "array", "items": {"type": "object", "properties": {
		"text": {"type": "string"}, "minutes": {"type": "number"}}, "required": ["text", "minutes"],
		"additionalProperties": false}, "maxItems": 3},
	"note": {"type": ["string", "null"]}},
  "required": ["title", "servings", "spicy", "course", "steps", "note"], "additionalProperties": false}`

// TestJSONSchemaMode: response_format json_schema over a chain of block
// servers: for several seeds, sampled, with max_tokens from the shortest
// document up, the text is a complete document that an independent
// validator (santhosh-tekuri/jsonschema) accepts; max_tokens below the
// shortest document is a 400. The document closed, finish_reason is
// "stop" even when it closed at max_tokens.
func TestJSONSchemaMode(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	var schema any
	require.NoError(t, json.Unmarshal([]byte(recipeSchema), &schema))
	format := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "recipe", "strict": true, "schema": schema}}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(recipeSchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("recipe.json", doc))
	validator, err := c.Compile("recipe.json")
	require.NoError(t, err)

	// {"title":"","servings":0,"spicy":true,"course":"main","steps":[],"note":""}
	const shortest = 75 // its len() in Python
	for seed, maxTokens := range []int{shortest, shortest + 1, 90, 120, 200, 300} {
		resp := post(t, hs.URL+"/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{map[string]any{"role": "user", "content": "Lily"}},
			"temperature": 1, "seed": seed, "max_tokens": maxTokens, "response_format": format}, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out openai.ChatCompletion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		text := out.Choices[0].Message.Content
		require.LessOrEqual(t, out.Usage.CompletionTokens, maxTokens)
		require.Equal(t, "stop", out.Choices[0].FinishReason, "a closed document is a natural stop, even at max_tokens")
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
		require.NoError(t, err, "seed %d max_tokens %d: %q", seed, maxTokens, text)
		require.NoError(t, validator.Validate(v), "%q", text)
	}
	resp := post(t, hs.URL+"/v1/chat/completions", map[string]any{"model": "stories260K", "messages": []any{map[string]any{"role": "user", "content": "x"}},
		"max_tokens": shortest - 1, "response_format": format}, nil)
	var e openai.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%+v", e)
	require.Equal(t, "max_tokens", *e.Error.Param)
}

// TestSystemFingerprint: every response and chunk carries one
// system_fingerprint, "fp_" and 12 hex digits, the same for chat and
// completions, streamed or not.
func TestSystemFingerprint(t *testing.T) {
	hs, _ := startAPI(t, ingresstest.StartChain(t), nil)
	seen := map[string]bool{}
	for _, stream := range []bool{false, true} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := map[string]any{"model": "stories260K", "max_tokens": 3, "stream": stream, "prompt": "Once",
				"messages": []any{map[string]any{"role": "user", "content": "x"}}}
			if path == "/v1/completions" {
				delete(body, "messages")
			} else {
				delete(body, "prompt")
			}
			resp := post(t, hs.URL+path, body, nil)
			var payloads []string
			if stream {
				payloads = events(t, resp)
				payloads = payloads[:len(payloads)-1] // [DONE]
			} else {
				require.Equal(t, http.StatusOK, resp.StatusCode)
				var raw json.RawMessage
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
				payloads = []string{string(raw)}
			}
			for _, p := range payloads {
				var fp struct {
					SystemFingerprint string `json:"system_fingerprint"`
				}
				require.NoError(t, json.Unmarshal([]byte(p), &fp))
				require.Regexp(t, regexp.MustCompile(`^fp_[0-9a-f]{12}$`), fp.SystemFingerprint, p)
				seen[fp.SystemFingerprint] = true
			}
		}
	}
	require.Len(t, seen, 1)
}
