package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitBehaviors runs the Split pre-tokenizer on the example of Hugging
// Face tokenizers' SplitDelimiterBehavior documentation: "the-final--countdown"
// split on "-".
func TestSplitBehaviors(t *testing.T) {
	dash, err := literalPattern("-")
	require.NoError(t, err)
	for _, tc := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Removed", false, []string{"the", "final", "countdown"}},
		{"Isolated", false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", false, []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", false, []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", false, []string{"the", "-", "final", "--", "countdown"}},
		{"Removed", true, []string{"-", "-", "-"}},
		{"Isolated", true, []string{"the", "-", "final", "-", "-", "countdown"}},
	} {
		t.Run(tc.behavior, func(t *testing.T) {
			p := splitPre{pat: dash, behavior: splitBehaviors[tc.behavior], invert: tc.invert}
			got, err := p.split(nil, "the-final--countdown")
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestPatterns splits texts with the byte-level families' patterns; the
// expected words follow from the regular expressions (alternatives tried
// left to right at each position).
func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		name, pattern, text string
		want                []string
	}{
		{"llama3 contractions", llama3Pattern, "I'LL DON'T we're", []string{"I", "'LL", " DON", "'T", " we", "'re"}},
		{"llama3 digits", llama3Pattern, "1234567 x", []string{"123", "456", "7", " x"}},
		{"llama3 spaces", llama3Pattern, "a   b  \n\nc ", []string{"a", "  ", " b", "  \n\n", "c", " "}},
		{"llama3 punctuation", llama3Pattern, "x!!! ...\n\ny", []string{"x", "!!!", " ...\n\n", "y"}},
		{"llama3 one symbol joins letters", llama3Pattern, "$HOME _x", []string{"$HOME", " _", "x"}},
		{"qwen2 digits", qwen2Pattern, "v12", []string{"v", "1", "2"}},
		{"gpt2 contractions are lower case only", gpt2Pattern, "I'LL it's", []string{"I", "'", "LL", " it", "'s"}},
		{"gpt2 spaces", gpt2Pattern, "a  b\tc", []string{"a", " ", " b", "\t", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pat, err := regexPattern(tc.pattern)
			require.NoError(t, err)
			got, err := splitPre{pat: pat, behavior: splitIsolated}.split(nil, tc.text)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestPatternWhitespaceClass pins \s to Unicode White_Space, as Hugging
// Face tokenizers (Oniguruma) and tiktoken have it: U+0085 is whitespace
// and U+FEFF is not. JavaScript's \s, and so transformers.js, has it the
// other way round; the oracle corpus leaves both out.
func TestPatternWhitespaceClass(t *testing.T) {
	pat, err := regexPattern(llama3Pattern)
	require.NoError(t, err)
	p := splitPre{pat: pat, behavior: splitIsolated}
	got, err := p.split(nil, "a\u0085\u0085b")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "\u0085", "\u0085b"}, got, "NEL is \\s: the run but its last, which joins the word")
	got, err = p.split(nil, "a\ufeff\ufeffb")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "\ufeff\ufeff", "b"}, got, "BOM is not \\s: a run of symbols")
}

func TestByteLevelPre(t *testing.T) {
	p, err := newByteLevelPre(true, true)
	require.NoError(t, err)
	got, err := p.split(nil, "Hi  there\n")
	require.NoError(t, err)
	require.Equal(t, []string{"ĠHi", "Ġ", "Ġthere", "Ċ"}, got, "prefix space, GPT-2 split, bytes spelled in GPT-2's alphabet")
	p, err = newByteLevelPre(false, false)
	require.NoError(t, err)
	got, err = p.split(nil, "é!")
	require.NoError(t, err)
	require.Equal(t, []string{"Ã©!"}, got, "é is C3 A9")
	for b := range 256 {
		back, ok := fromByteLevel(toByteLevel(string([]byte{byte(b)})))
		require.True(t, ok)
		require.Equal(t, string([]byte{byte(b)}), back)
	}
	_, ok := fromByteLevel("日")
	require.False(t, ok, "not in the alphabet")
}
