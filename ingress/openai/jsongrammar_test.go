package openai

import (
	"bytes"
	"encoding/json"

	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks/synth"
)

// personSchema: two required properties, an optional array of an enum
// with at most 2 items, an optional nullable boolean.
const personSchema = `{"type": "object", "properties": {
	"name": {"type": "string", "description": "ignored"},
	"age": {"type": "integer"},
	"tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
	"ok": {"type": ["boolean", "null"]}},
  "required": ["name", "age"], "additionalProperties": false}`

// treeSchema is recursive through $defs.
const treeSchema = `{"$defs": {"n": {"type": "object", "properties": {
	"v": {"type": "number"},
	"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}, "minItems": 1}},
  "required": ["v"]}},
  "$ref": "#/$defs/n"}`

func mustCompile(t *testing.T, schema string) *node {
	t.Helper()
	n, err := compileSchema([]byte(schema), false)
	require.NoError(t, err)
	return n
}

// TestJSONSchemaPrefixes: the recognizer accepts exactly the prefixes of
// the compact documents of the schema with properties in declared order
// (each row decided by hand from the schema), and need is the length of
// the shortest completion, counted by hand.
func TestJSONSchemaPrefixes(t *testing.T) {
	tests := []struct {
		schema       string
		text         string
		prefix, done bool
		need         int
	}{
		// {"name":"","age":0}: 1 + 7 + 2 + 1 + 6 + 1 + 1
		{personSchema, ``, true, false, 19},
		{personSchema, `{`, true, false, 18},
		{personSchema, `{}`, false, false, 0},
		{personSchema, ` {`, false, false, 0},
		{personSchema, `{"name":"x`, true, false, 10}, // ","age":0}
		{personSchema, `{"name":"x\`, true, false, 11},
		{personSchema, `{"name":"x\u00`, true, false, 12},
		{personSchema, `{"name":"x","age":1`, true, false, 1},
		{personSchema, `{"name":"x","age":-`, true, false, 2},
		{personSchema, `{"name":"x","age":1}`, true, true, 0},
		{personSchema, `{"name":"x","age":01`, false, false, 0},
		{personSchema, `{"name":"x","age":1.5`, false, false, 0},
		{personSchema, `{"age":1`, false, false, 0},
		{personSchema, `{"name": "x"`, false, false, 0},
		// after ",": "tags":[]} or "ok":true} (10 either way)
		{personSchema, `{"name":"x","age":1,`, true, false, 10},
		{personSchema, `{"name":"x","age":1,"t`, true, false, 8},
		{personSchema, `{"name":"x","age":1,}`, false, false, 0},
		{personSchema, `{"name":"x","age":1,"tags":[`, true, false, 2},
		{personSchema, `{"name":"x","age":1,"tags":["a"`, true, false, 2},
		{personSchema, `{"name":"x","age":1,"tags":["a","b"]}`, true, true, 0},
		{personSchema, `{"name":"x","age":1,"tags":["a","b",`, false, false, 0},
		{personSchema, `{"name":"x","age":1,"tags":["c"`, false, false, 0},
		{personSchema, `{"name":"x","age":-5,"ok":null}`, true, true, 0},
		{personSchema, `{"name":"x","age":1,"ok":true,"tags":[]}`, false, false, 0},
		{personSchema, `{"name":"x","age":1,"ok":nul`, true, false, 2},
		{personSchema, `{"name":"x","age":1,"extra":1}`, false, false, 0},
		{personSchema, `{"name":"x","age":1}x`, false, false, 0},
		{personSchema, "{\"name\":\"a\tb\"", false, false, 0},
		{personSchema, `{"name":"é\n","age":0}`, true, true, 0},
		// {"v":0}
		{treeSchema, ``, true, false, 7},
		{treeSchema, `{"v":1,"kids":[`, true, false, 9}, // {"v":0}]}
		{treeSchema, `{"v":1,"kids":[]`, false, false, 0},
		{treeSchema, `{"v":1,"kids":[{"v":2e-3,"kids":[{"v":-0.5}]}]}`, true, true, 0},
		{treeSchema, `{"v":1,"kids":[{"v":2,"kids":[{"v":3`, true, false, 5},
		{treeSchema, `{"v":1234567890123456`, true, false, 1},
		{treeSchema, `{"v":12345678901234567`, false, false, 0},
		{treeSchema, `{"v":1e-99`, true, false, 1},
		{treeSchema, `{"v":1e-100`, false, false, 0},
		{`{"enum": [1, 12, "x", null, {"a": [true]}]}`, `1`, true, true, 0},
		{`{"enum": [1, 12, "x", null, {"a": [true]}]}`, `12`, true, true, 0},
		{`{"enum": [1, 12, "x", null, {"a": [true]}]}`, `13`, false, false, 0},
		{`{"enum": [1, 12, "x", null, {"a": [true]}]}`, `{"a":[`, true, false, 6},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`, `-`, true, false, 1},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`, `"`, true, false, 1},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`, `t`, false, false, 0},
		{`{}`, `{"a":[1,{"b":"c"},true],"d":null}`, true, true, 0},
		{`{}`, `[1,2`, true, false, 1},
		{`{"type": "object"}`, `{"a":`, true, false, 2},                                        // 0}
		{`{"type": "object"}`, `{"a":1,`, true, false, 5},                                      // "":0}
		{`{"type": "array", "minItems": 2, "items": {"type": "string"}}`, `[`, true, false, 6}, // "","]
		{`{"type": "array", "minItems": 2, "items": {"type": "string"}}`, `[""]`, false, false, 0},
		{`{"type": "array", "maxItems": 0}`, `[]`, true, true, 0},
		{`{"type": "array", "maxItems": 0}`, `[1`, false, false, 0},
	}
	for _, tt := range tests {
		st := newJState(mustCompile(t, tt.schema))
		ok := true
		for i := range len(tt.text) {
			if ok = st.step(tt.text[i]); !ok {
				break
			}
		}
		require.Equal(t, tt.prefix, ok, "%s: %q", tt.schema, tt.text)
		if !ok {
			continue
		}
		require.Equal(t, tt.done, st.canEnd(), "%q", tt.text)
		require.Equal(t, tt.need, st.need(), "%q", tt.text)
	}
}

// TestJSONSchemaCompileErrors: what the recognizer cannot guarantee is a
// clear error naming the keyword and where it is.
func TestJSONSchemaCompileErrors(t *testing.T) {
	tests := []struct{ schema, substr string }{
		{`{"type": "string", "pattern": "^a"}`, `keyword "pattern" at #`},
		{`{"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}}`, `keyword "minimum" at #/properties/a`},
		{`{"type": "strin"}`, `type "strin" at #`},
		{`{"anyOf": [{"type": "string"}, {"enum": ["x"]}]}`, `start with '"'`},
		{`{"type": "object", "properties": {"a": {}}, "required": ["b"]}`, `required property "b"`},
		{`{"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]}`, "no finite JSON document"},
		{`{"$ref": "#/$defs/missing"}`, "no such definition"},
		{`{"enum": []}`, "non-empty array"},
		{`{"type": "integer", "enum": ["x"]}`, "no value of #/enum"},
		{`[1]`, "want an object"},
		{`{"type": "array", "minItems": 3, "maxItems": 2}`, "maxItems 2 < minItems 3"},
	}
	for _, tt := range tests {
		_, err := compileSchema([]byte(tt.schema), false)
		require.ErrorIs(t, err, ErrSchema, tt.schema)
		require.Contains(t, err.Error(), tt.substr, tt.schema)
	}
}

// TestJSONSchemaStrict: in strict mode an object without properties is
// "{}" (additionalProperties false by default); otherwise any object.
func TestJSONSchemaStrict(t *testing.T) {
	for _, strict := range []bool{false, true} {
		n, err := compileSchema([]byte(`{"type": "object"}`), strict)
		require.NoError(t, err)
		st := newJState(n)
		ok := true
		for _, c := range []byte(`{"a"`) {
			ok = ok && st.step(c)
		}
		require.Equal(t, !strict, ok)
	}
}

// TestJSONSchemaConstraintBudget draws random allowed tokens from a
// vocabulary of single characters and longer pieces, for many seeds and
// budgets from the shortest document's length up: every text ends
// complete within its budget, parses, and is valid for the schema by an
// independent validator (santhosh-tekuri/jsonschema).
func TestJSONSchemaConstraintBudget(t *testing.T) {
	vocab := pieces{"<s>", "</s>", ""}
	for c := byte(' '); c <= '~'; c++ {
		vocab = append(vocab, string(c))
	}
	vocab = append(vocab, `{"`, `":`, `","`, `"}`, `]}`, `true`, `null`, `name`, `age":`, `123`, `.5`, `e+`, `\u00e9`, `"a"`, `kids":[`, `{"v":`, "é")
	for _, schema := range []string{personSchema, treeSchema, `{"type": "object"}`,
		`{"type": "object", "properties": {"s": {"type": "array", "items": {"type": "array", "items": {"type": ["string", "number"]}}, "minItems": 2}}, "required": ["s"]}`} {
		root := mustCompile(t, schema)
		validator := compileOracle(t, schema)
		for seed := range uint64(60) {
			rng := rand.New(rand.NewPCG(seed, 7))
			c := newJSONSchema(vocab, root, nil)
			budget := c.state.need() + rng.IntN(40)
			c.SetBudget(budget)
			var text strings.Builder
			drawn := 0
			for drawn < budget {
				var allowed []int
				for id := range vocab {
					if c.Allowed(id) {
						allowed = append(allowed, id)
					}
				}
				require.NotEmpty(t, allowed, "%s seed %d after %q", schema, seed, text.String())
				id := allowed[rng.IntN(len(allowed))]
				c.Accept(id)
				if id == vocab.EOS() {
					break
				}
				text.WriteString(vocab[id])
				drawn++
			}
			require.True(t, c.state.canEnd(), "%s seed %d budget %d: %q", schema, seed, budget, text.String())
			var v any
			require.NoError(t, json.Unmarshal([]byte(text.String()), &v), "%q", text.String())
			require.NoError(t, validator.Validate(v), "%s: %q", schema, text.String())
		}
	}
}

// compileOracle compiles schema with the external validator.
func compileOracle(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	s, err := c.Compile("schema.json")
	require.NoError(t, err)
	return s
}

// BenchmarkJSONSchemaMask times one step's mask over a 32000-piece
// vocabulary (synth's Llama 2 shaped one) inside a string of personSchema,
// the most permissive state: go test -bench JSONSchemaMask -run '^$'.
func BenchmarkJSONSchemaMask(b *testing.B) {
	words, _, _, err := synth.Vocab(32000)
	require.NoError(b, err)
	vocab := pieces(words)
	n, err := compileSchema([]byte(personSchema), false)
	require.NoError(b, err)
	c := newJSONSchema(vocab, n, nil)
	c.SetBudget(1000)
	for i := range len(`{"name":"`) {
		c.state.step(`{"name":"`[i])
	}
	allowed := 0
	for b.Loop() {
		allowed = 0
		for id := range vocab {
			if c.Allowed(id) {
				allowed++
			}
		}
	}
	b.ReportMetric(float64(allowed), "allowed")
}
