package openai

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRewriteConditionals pins the rewrite of conditional expressions:
// anywhere in {{ }}, in {% set %} values and {% if %} conditions, and
// inside brackets in any tag; never in text, comments, raw blocks,
// strings, or the loop filter of {% for %}.
func TestRewriteConditionals(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{{ a if c else b }}`, `{{ ((c) and [a] or [b])[0] }}`},
		{`{{- (x if c else '') + y -}}`, `{{- (((c) and [x] or [''])[0]) + y -}}`},
		{`{{ a if c else b if d else e }}`, `{{ ((c) and [a] or [((d) and [b] or [e])[0]])[0] }}`},
		{`{{ a if c }}`, `{{ ((c) and [a] or [none])[0] }}`},
		{`{% set x = a if c else b %}`, `{% set x = ((c) and [a] or [b])[0] %}`},
		{`{% if a if c else b %}`, `{% if ((c) and [a] or [b])[0] %}`},
		{`{{ f(a if c else b, k=x if d else y) }}`, `{{ f(((c) and [a] or [b])[0], k=((d) and [x] or [y])[0]) }}`},
		{`{{ {'k': v if c else w}[i if c else j] }}`, `{{ {'k': ((c) and [v] or [w])[0]}[((c) and [i] or [j])[0]] }}`},
		{`{% for m in ms if m.role != 'system' %}{% endfor %}`, `{% for m in ms if m.role != 'system' %}{% endfor %}`},
		{`{% for m in (ms if c else ns) %}`, `{% for m in (((c) and [ms] or [ns])[0]) %}`},
		{`{{ 'a if b else c' }} text if x else y {# (a if b else c) #}`, `{{ 'a if b else c' }} text if x else y {# (a if b else c) #}`},
		{`{% raw %}{{ (a if b else c) }}{% endraw %}`, `{% raw %}{{ (a if b else c) }}{% endraw %}`},
		{`{{ x == y }}{{ "}}" }}{{ {'a': {'b': 1}} }}`, `{{ x == y }}{{ "}}" }}{{ {'a': {'b': 1}} }}`},
		{"{{ x }", "{{ x }"},
		{`{% if x) %}`, `{% if x) %}`},
	} {
		require.Equal(t, tt.want, rewriteConditionals(tt.in), tt.in)
	}
}

// TestConditionalExpressions renders conditionals that gonja alone cannot
// parse, with Python's results; the untaken branch is never evaluated.
func TestConditionalExpressions(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`{{ 'x' + ('a' if n > 1 else 'b') }}`, "xa"},
		{`{{ ('' if n > 1 else 'b') ~ '|' }}`, "|"},
		{`{{ [0 if n else 1, (none if n else 2)] | tojson }}`, "[0, null]"},
		{`{{ 'a' if n == 1 else 'b' if n == 2 else 'c' }}`, "b"},
		{`{% set s = 'p' if n < 0 else 'q' if n > 9 else 'r' %}{{ s }}`, "r"},
		{`{{ ('ok' if n else raise_exception('evaluated')) }}`, "ok"},
		{`{{ ('missing' | upper if n > 5) }}|`, "|"},
	} {
		tpl, err := NewChatTemplate(tt.src, "", "")
		require.NoError(t, err, tt.src)
		got, err := tpl.Apply(Conversation{Vars: map[string]any{"n": 2}})
		require.NoError(t, err, tt.src)
		require.Equal(t, tt.want, got, tt.src)
	}
}

// TestToJSON pins transformers' tojson where the oracle cannot (it renders
// numbers as JavaScript does): Python's float repr, indent 0, and errors.
func TestToJSON(t *testing.T) {
	v, err := decodeJSON([]byte(`{"f": [1.0, 0.1, 1e16, 1.5e-5, 123456789012.5, -0.0], "i": [0, -3, 12345678901234], "s": "\u2028 \u007f é"}`))
	require.NoError(t, err)
	for _, tt := range []struct {
		o    jsonOptions
		want string
	}{
		{jsonOptions{indent: -1, itemSep: ", ", keySep: ": "},
			`{"f": [1.0, 0.1, 1e+16, 1.5e-05, 123456789012.5, -0.0], "i": [0, -3, 12345678901234], "s": "` + "\u2028 \u007f é" + `"}`},
		{jsonOptions{indent: -1, itemSep: ",", keySep: ":", ensureASCII: true, sortKeys: true},
			`{"f":[1.0,0.1,1e+16,1.5e-05,123456789012.5,-0.0],"i":[0,-3,12345678901234],"s":"\u2028 ` + "\u007f" + ` \u00e9"}`},
		{jsonOptions{indent: 0, itemSep: ",", keySep: ": "},
			"{\n\"f\": [\n1.0,\n0.1,\n1e+16,\n1.5e-05,\n123456789012.5,\n-0.0\n],\n\"i\": [\n0,\n-3,\n12345678901234\n],\n\"s\": \"\u2028 \u007f é\"\n}"},
	} {
		got, err := toJSON(exec.AsValue(v), tt.o)
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	for f, want := range map[float64]string{math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", math.NaN(): "NaN", 1e-5: "1e-05", 0.0001: "0.0001", 1e300: "1e+300"} {
		require.Equal(t, want, pyFloat(f))
	}
	_, err = toJSON(exec.AsValue(map[int]int{1: 2}), jsonOptions{indent: -1})
	require.Error(t, err)

	tpl, err := NewChatTemplate(`{{ x | tojson(indent="four") }}`, "", "")
	require.NoError(t, err)
	_, err = tpl.Apply(Conversation{Vars: map[string]any{"x": 1}})
	require.ErrorIs(t, err, ErrTemplate)
}

// TestPythonStrings pins the str methods and the trim filter that replace
// gonja's, on Python's results.
func TestPythonStrings(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s | trim }}`, "a b|a b\u00a0\x1f|\u3000 \ta b|a b"},
		{`{{ 'éaé'.strip('é') }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip(chars='x') }}|{{ '--a-' | trim('-') }}`, "a|axx|xxa|a"},
		{`{{ ' a  b c '.split() | tojson }}{{ ' a  b c '.split(none, 1) | tojson }}{{ ' a  b c '.rsplit(maxsplit=1) | tojson }}`, `["a", "b", "c"]["a", "b c "][" a  b", "c"]`},
		{`{{ 'a,b,,c'.split(',') | tojson }}{{ 'a,b,c'.split(',', 1) | tojson }}{{ 'a,b,c'.rsplit(',', 1) | tojson }}{{ 'a,b'.split(',', 0) | tojson }}`, `["a", "b", "", "c"]["a", "b,c"]["a,b", "c"]["a,b"]`},
		{`{{ 'x</think>y</think>z'.split('</think>')[-1] }}{{ ''.split() | length }}{{ ''.split(',') | tojson }}`, `z0[""]`},
	} {
		tpl, err := NewChatTemplate(tt.src, "", "")
		require.NoError(t, err, tt.src)
		got, err := tpl.Apply(Conversation{Vars: map[string]any{"s": "\u3000 \ta b\u00a0\x1f"}})
		require.NoError(t, err, tt.src)
		require.Equal(t, tt.want, got, tt.src)
	}
	tpl, err := NewChatTemplate(`{{ 'a'.split('') }}`, "", "")
	require.NoError(t, err)
	_, err = tpl.Apply(Conversation{})
	require.ErrorIs(t, err, ErrTemplate)
}

// TestStrftime checks the directives of Python's strftime that
// @huggingface/jinja leaves as written.
func TestStrftime(t *testing.T) {
	at := time.Date(2024, time.February, 29, 0, 7, 5, 0, time.UTC)
	require.Equal(t, "Thu Thursday Feb February 29 00 12 060 02 07 AM 05 24 2024 % %q", strftime(at, "%a %A %b %B %d %H %I %j %m %M %p %S %y %Y %% %q"))
	require.Equal(t, "01 PM", strftime(at.Add(13*time.Hour), "%I %p"))
	require.Equal(t, "trailing %", strftime(at, "trailing %"))
}

// TestChatTemplateFailures checks that a template failing in ways gonja
// would panic on or swallow is an ErrTemplate, not a crash or a text.
func TestChatTemplateFailures(t *testing.T) {
	for _, src := range []string{
		`{{ "%s-%d" % ('x', 2) }}`,                                                 // gonja panics (integer divide by zero)
		`{% if raise_exception('stop') is defined %}{% endif %}after`,              // "is defined" swallows the error
		`{% for m in messages %}{{ raise_exception('no ' ~ m.role) }}{% endfor %}`, // the first call's message
	} {
		tpl, err := NewChatTemplate(src, "", "")
		require.NoError(t, err, src)
		_, err = tpl.Apply(Conversation{Messages: []Message{{Role: "user"}, {Role: "assistant"}}})
		require.ErrorIs(t, err, ErrTemplate, src)
	}
	tpl, err := NewChatTemplate(`{% for m in messages %}{{ raise_exception('no ' ~ m.role) }}{% endfor %}`, "", "")
	require.NoError(t, err)
	_, err = tpl.Apply(Conversation{Messages: []Message{{Role: "user"}, {Role: "assistant"}}})
	require.EqualError(t, err, "openai: chat template: raise_exception: no user")

	_, err = NewChatTemplate(`{% generation x %}{% endgeneration %}`, "", "")
	require.ErrorIs(t, err, ErrTemplate)
	_, err = tpl.Apply(Conversation{Tools: []byte(`[{"a": 1}`)})
	require.ErrorIs(t, err, ErrTemplate)
}

// TestChatTemplateConcurrent renders one template from many goroutines
// (the handler shares it); run with -race.
func TestChatTemplateConcurrent(t *testing.T) {
	tpl, err := NewChatTemplate(`{% for m in messages %}{{ m.content | tojson }}{% endfor %}{{ strftime_now('%Y') }}{% if messages | length > 2 %}{{ raise_exception('long') }}{% endif %}`, "", "")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msgs := []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}
			if i%2 == 1 {
				msgs = append(msgs, Message{Role: "user", Content: "c"})
			}
			for range 20 {
				got, err := tpl.Apply(Conversation{Messages: msgs, Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)})
				if i%2 == 1 {
					assert.ErrorIs(t, err, ErrTemplate)
					continue
				}
				assert.NoError(t, err)
				assert.Equal(t, `"a""b"2030`, got)
			}
		})
	}
	wg.Wait()
}
