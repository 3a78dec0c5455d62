package openai

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJSONModePrefixes: jsonMode accepts exactly the prefixes of JSON
// objects (written by hand from RFC 8259's grammar), and is done exactly
// when the object is closed.
func TestJSONModePrefixes(t *testing.T) {
	tests := []struct {
		text         string
		prefix, done bool
	}{
		{``, true, false},
		{`{`, true, false},
		{` {`, false, false}, // the text starts at the object
		{"{\n" + strings.Repeat(" ", 15) + "\"a\": 1}", true, true}, // 16 whitespace bytes in a row
		{"{\n" + strings.Repeat(" ", 16) + "\"a\": 1}", false, false},
		{"{\"a\": \"                    \"}", true, true}, // in strings they are text
		{`{}`, true, true},
		{`{} `, false, false}, // nothing after the object: EOS must come
		{`[]`, false, false},  // json_object: an object at the top
		{`"a"`, false, false},
		{`1`, false, false},
		{`{"a"`, true, false},
		{`{"a":`, true, false},
		{`{"a": 1`, true, false},
		{`{"a": 1}`, true, true},
		{`{"a": -0.5e+10, "b": [true, false, null, "x\n\u00e9", {}], "c": {"d": []}}`, true, true},
		{`{"a": 01}`, false, false},
		{`{"a": -1234567890123456.1234567890123456e-99}`, true, true}, // 16 digits a part, 2 in the exponent
		{`{"a": 12345678901234567`, false, false},
		{`{"a": 1.12345678901234567`, false, false},
		{`{"a": 1e100`, false, false},
		{`{"a": 1.}`, false, false},
		{`{"a": 1e}`, false, false},
		{`{"a": -}`, false, false},
		{`{"a": tru`, true, false},
		{`{"a": trux`, false, false},
		{`{"a": "\x"}`, false, false},
		{`{"a": "\u12G"}`, false, false},
		{"{\"a\": \"tab\there\"}", false, false}, // a raw control character in a string
		{`{"a" 1}`, false, false},
		{`{a: 1}`, false, false},
		{`{"a": 1,}`, false, false},
		{`{"a": [1,]}`, false, false},
		{`{"a": [1 2]}`, false, false},
		{`{"a": [1}`, false, false},
		{`{"a": {]}`, false, false},
		{`{,}`, false, false},
		{`{"é": "ünï"}`, true, true},
	}
	for _, tt := range tests {
		var j jsonMode
		ok := j.feed(tt.text)
		require.Equal(t, tt.prefix, ok, "%q", tt.text)
		if ok {
			require.Equal(t, tt.done, j.mode == mDone, "%q", tt.text)
			if tt.done {
				var v map[string]any
				require.NoError(t, json.Unmarshal([]byte(tt.text), &v), "%q is done, so it is an object", tt.text)
			}
		}
	}
}

// pieces is a tokenizer of a fixed vocabulary for the constraint's tests:
// 0 BOS, 1 EOS, 2 a control piece, then the texts.
type pieces []string

func (p pieces) Encode(string, bool) ([]int, error) { return nil, nil }
func (p pieces) Decode(_, id int) string            { return p[id] }
func (p pieces) BOS() int                           { return 0 }
func (p pieces) EOS() int                           { return 1 }
func (p pieces) VocabSize() int                     { return len(p) }

// TestJSONModeNeed: need is the length of the shortest text that closes
// the object, counted by hand (the closing text in each comment).
func TestJSONModeNeed(t *testing.T) {
	tests := []struct {
		text string
		need int
	}{
		{``, 2},                        // {}
		{`{`, 1},                       // }
		{`{"a`, 4},                     // ":0}
		{`{"a\`, 5},                    // n":0}
		{`{"a":`, 2},                   // 0}
		{`{"a":[`, 2},                  // ]}
		{`{"a":[1,`, 3},                // 0]}
		{`{"a":[1, {"b":"x\u0`, 7},     // 000"}]}
		{`{"a":[1, {"b":tr`, 5},        // ue}]}
		{`{"a":-`, 2},                  // 0}
		{`{"a":1.5e+`, 2},              // 0}
		{`{"a":12`, 1},                 // }
		{`{"a":{}, `, 5},               // "":0}
		{`{"a":"x"  `, 1},              // }
		{`{"a":"x"}`, 0},               //
		{`{"a":"x", "b":[{}, []]}`, 0}, //
	}
	for _, tt := range tests {
		var j jsonMode
		require.True(t, j.feed(tt.text), tt.text)
		require.Equal(t, tt.need, j.need(), tt.text)
	}
}

// TestJSONObjectBudget draws random allowed tokens (some with spaces)
// under budgets from 2 up: every text is a closed object within budget.
func TestJSONObjectBudget(t *testing.T) {
	vocab := pieces{"<s>", "</s>", ""}
	for c := byte(' '); c <= '~'; c++ {
		vocab = append(vocab, string(c))
	}
	vocab = append(vocab, ` "`, `": `, `", "`, `"}`, `]}`, ` true`, "\n  ", `{"`, `123`, `[[`)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		c := newJSONObject(vocab)
		budget := 2 + rng.IntN(40)
		c.SetBudget(budget)
		var text strings.Builder
		for drawn := 0; drawn < budget; drawn++ {
			var allowed []int
			for id := range vocab {
				if c.Allowed(id) {
					allowed = append(allowed, id)
				}
			}
			require.NotEmpty(t, allowed, "seed %d after %q", seed, text.String())
			id := allowed[rng.IntN(len(allowed))]
			c.Accept(id)
			if id == vocab.EOS() {
				break
			}
			text.WriteString(vocab[id])
		}
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(text.String()), &v), "seed %d budget %d: %q", seed, budget, text.String())
	}
}

// TestJSONObjectConstraint: which tokens the json_object constraint allows
// as a text is built, EOS only once the object is closed.
func TestJSONObjectConstraint(t *testing.T) {
	vocab := pieces{"<s>", "</s>", "", "{", "}", ` "a"`, ":", " 1", "x", `{"`, `b":`, `"}`, ` "`}
	c := newJSONObject(vocab)
	allowed := func() []int {
		var ids []int
		for id := range vocab {
			if c.Allowed(id) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	steps := []struct {
		accept int
		want   []int // allowed before accepting
	}{
		{3, []int{3, 9}},               // "{" or "{\"": an object starts
		{5, []int{4, 5, 11, 12}},       // "}", " \"a\"", "\"}" (a key starting with "}"), " \""
		{6, []int{6}},                  // ":"
		{7, []int{3, 5, 7, 9, 11, 12}}, // a value: "{", " \"a\"", " 1", "{\"", "\"}", " \""
		{4, []int{4}},                  // only "}" ends the number here (no "," in this vocabulary)
		{1, []int{1}},                  // the object is closed: EOS alone
	}
	for i, s := range steps {
		require.Equal(t, s.want, allowed(), "step %d", i)
		c.Accept(s.accept)
	}
}
