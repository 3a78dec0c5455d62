package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/launch"
)

// answerSchema is what the npm test asks a random-weight model for:
// nested objects, an array of objects with a bound, an enum, integers and
// numbers, booleans, a nullable string.
const answerSchema = `{"type": "object", "properties": {
	"name": {"type": "string"},
	"count": {"type": "integer"},
	"ok": {"type": "boolean"},
	"kind": {"enum": ["cat", "dog", 3, null]},
	"items": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
		"x": {"type": "number"}, "tag": {"type": ["string", "null"]}}, "required": ["x", "tag"], "additionalProperties": false}},
	"meta": {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"], "additionalProperties": false}},
  "required": ["name", "count", "ok", "kind", "items", "meta"], "additionalProperties": false}`

// TestProxyOpenAINpmSchema is issue 18's OpenAI-completeness acceptance
// test: the official openai npm package against `swarm proxy` over two
// `swarm serve` processes of a synthesized random-weight model
// (clients/js/openai_schema.mjs). For 20 seeds the json_schema output
// parses and is valid for the schema by an independent validator
// (santhosh-tekuri/jsonschema): random weights follow nothing, so the
// constraint alone makes it valid. Penalties and logit_bias change greedy
// output, models.retrieve works, and a CORS preflight from the allowed
// origin is answered (another origin's is not allowed).
func TestProxyOpenAINpmSchema(t *testing.T) {
	dir := npmPackage(t)
	model := filepath.Join(t.TempDir(), "tiny")
	_, errOut, code := runSwarmProcess(t, "model", "synth", "--layers", "2", "--dim", "64", "--ffn", "96",
		"--heads", "4", "--kv-heads", "2", "--vocab", "400", "--dtype", "f16", "--seed", "18", "--formats", "hf", "--out", model)
	require.Equal(t, 0, code, errOut)
	var urls []string
	for _, span := range []string{"0:1", "1:2"} {
		urls = append(urls, startServeProc(t, "--blocks", span, "--model", model).url)
	}
	proxy := startProc(t, swarmCmd(t, "proxy", "--listen", "127.0.0.1:0", "--model", model, "--servers", strings.Join(urls, ","),
		"--cors-origins", "http://app.example"), launch.ProxyReadyPrefix)

	pieces, _, _, err := synth.Vocab(400)
	require.NoError(t, err)
	biasToken := slices.Index(pieces, "x")
	require.Positive(t, biasToken)

	cmd := exec.Command("node", "openai_schema.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_PROXY_URL="+proxy.url, "SWARM_MODEL=tiny", "SWARM_SCHEMA="+answerSchema,
		"SEEDS=20", "MAX_TOKENS=160", "CORS_ORIGIN=http://app.example", "BIAS_TOKEN="+strconv.Itoa(biasToken))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node openai_schema.mjs: %s", stderr.String())
	var got struct {
		Retrieved struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"retrieved"`
		Documents []struct {
			Seed              int    `json:"seed"`
			Text              string `json:"text"`
			Parsed            bool   `json:"parsed"`
			FinishReason      string `json:"finish_reason"`
			CompletionTokens  int    `json:"completion_tokens"`
			SystemFingerprint string `json:"system_fingerprint"`
		} `json:"documents"`
		Streamed struct {
			Text         string   `json:"text"`
			Fingerprints []string `json:"fingerprints"`
		} `json:"streamed"`
		Plain, PlainAgain, Presence, Frequency, NegativeFrequency, Bias string
		Preflight, PreflightOther                                       struct {
			Status       int    `json:"status"`
			AllowOrigin  string `json:"allowOrigin"`
			AllowMethods string `json:"allowMethods"`
			AllowHeaders string `json:"allowHeaders"`
		}
		CrossOrigin struct {
			Status      int    `json:"status"`
			AllowOrigin string `json:"allowOrigin"`
		} `json:"crossOrigin"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	t.Logf("json_schema documents, seed 0: %s\nseed 1: %s", got.Documents[0].Text, got.Documents[1].Text)
	t.Logf("greedy: %q\npresence 2: %q\nfrequency 2: %q\nfrequency -2: %q\nlogit_bias: %q", got.Plain, got.Presence, got.Frequency, got.NegativeFrequency, got.Bias)

	require.Equal(t, "tiny", got.Retrieved.ID)
	require.Equal(t, "model", got.Retrieved.Object)

	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(answerSchema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("answer.json", doc))
	validator, err := c.Compile("answer.json")
	require.NoError(t, err)
	require.Len(t, got.Documents, 20)
	texts := map[string]bool{}
	for _, d := range append(got.Documents, struct {
		Seed              int    `json:"seed"`
		Text              string `json:"text"`
		Parsed            bool   `json:"parsed"`
		FinishReason      string `json:"finish_reason"`
		CompletionTokens  int    `json:"completion_tokens"`
		SystemFingerprint string `json:"system_fingerprint"`
	}{Seed: -1, Text: got.Streamed.Text, Parsed: true, CompletionTokens: 1}) {
		require.True(t, d.Parsed, "seed %d: JSON.parse failed on %q", d.Seed, d.Text)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(d.Text))
		require.NoError(t, err, "seed %d: %q", d.Seed, d.Text)
		require.NoError(t, validator.Validate(v), "seed %d: %q", d.Seed, d.Text)
		require.LessOrEqual(t, d.CompletionTokens, 160)
		if d.Seed >= 0 {
			require.Equal(t, "stop", d.FinishReason, "seed %d", d.Seed)
		}
		texts[d.Text] = true
	}
	require.Greater(t, len(texts), 15, "sampled documents differ from seed to seed")
	require.Regexp(t, `^fp_[0-9a-f]{12}$`, got.Documents[0].SystemFingerprint)
	require.Equal(t, []string{got.Documents[0].SystemFingerprint}, got.Streamed.Fingerprints)

	require.Equal(t, got.Plain, got.PlainAgain, "greedy is deterministic")
	for name, text := range map[string]string{"presence_penalty": got.Presence, "frequency_penalty": got.Frequency,
		"frequency_penalty -2": got.NegativeFrequency, "logit_bias": got.Bias} {
		require.NotEqual(t, got.Plain, text, name)
	}
	require.Equal(t, strings.Repeat("x", 40), got.Bias, "+100 on one token forces it")

	require.Equal(t, 204, got.Preflight.Status)
	require.Equal(t, "http://app.example", got.Preflight.AllowOrigin)
	require.Contains(t, got.Preflight.AllowMethods, "POST")
	require.Equal(t, "authorization,content-type,x-stainless-os", got.Preflight.AllowHeaders)
	require.Empty(t, got.PreflightOther.AllowOrigin)
	require.Equal(t, 200, got.CrossOrigin.Status)
	require.Equal(t, "http://app.example", got.CrossOrigin.AllowOrigin)
}
