package openai

import (
	"encoding/json"
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
