package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync"
)

// corpusFixed are hand-picked strings that stress the encoder: empty,
// whitespace runs, tabs and newlines, accents, CJK, emoji and other
// characters outside the vocabulary (byte fallback), literal control-token
// and byte-piece spellings, U+2581, invalid UTF-8, repeated characters.
var corpusFixed = []string{
	"",
	" ",
	"  ",
	"      ",
	"\t",
	"\n",
	"\n\n\n",
	"a",
	"Once upon a time",
	"Lily",
	" leading space",
	"trailing space ",
	"  two leading, two trailing  ",
	"tab\tseparated\tvalues",
	"line one\nline two\r\nline three",
	"Hello, World!",
	"I believe the meaning of life is",
	"Simply put, the theory of relativity states that ",
	"The quick brown fox jumps over the lazy dog.",
	"naïve café résumé — déjà vu",
	"Ελληνικά και русский язык",
	"日本語のテキストと中文文本",
	"한국어 문장입니다",
	"emoji: 😀🎉🚀 and 👩‍👩‍👧‍👦 family",
	"math: ∀x ∈ ℝ, x² ≥ 0",
	"<s> not a control token </s>",
	"<unk> <0x41> <0xZZ>",
	"\u2581 literal lower one eighth block \u2581\u2581",
	"\xff\xfe invalid \xc3 utf-8 \x80",
	"aaaaaaa",
	"ababababab",
	"!!!!!!!!",
	".........",
	"1234567890 3.14159 -42",
	"snake_case camelCase kebab-case",
	"https://example.com/path?query=1&x=y#frag",
	"{\"json\": [1, 2, 3], \"ok\": true}",
	"func main() { fmt.Println(\"hi\") }",
	"\u00a0non-breaking\u00a0spaces\u200aand hair\u200aspaces",
	"zero\u200bwidth\u200bspace",
	"\x00nul byte",
}

// corpusWords are fragments the generated strings are built from.
var corpusWords = []string{
	"the", "a", "Lily", "Tim", "happy", "ball", "park", "mom", "said", "was",
	"upon", "time", "big", "red", "little", "dog", "cat", "tree", "sun",
	"played", "jumped", "friend", "together", "wanted", "couldn't", "it's",
	"über", "señor", "façade", "中文", "日本", "🙂", "🐶", "€", "£100", "42",
	"3.5", "x", "Q", "ZZZ", "\u2581", "<s>", "</s>", "\xe2\x82", "é", "ñ",
}

// corpusSeps join the fragments.
var corpusSeps = []string{" ", " ", " ", "  ", ", ", ". ", "\n", "\t", "", "   ", "! ", "? ", "\" "}

// corpus returns the fixed strings and n generated ones (deterministic).
func corpus(n int) []string {
	r := rand.New(rand.NewPCG(2023, 8))
	out := append([]string(nil), corpusFixed...)
	for range n {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString(corpusSeps[r.IntN(len(corpusSeps))])
		}
		for w := r.IntN(12) + 1; w > 0; w-- {
			b.WriteString(corpusWords[r.IntN(len(corpusWords))])
			if w > 1 {
				b.WriteString(corpusSeps[r.IntN(len(corpusSeps))])
			}
		}
		if r.IntN(4) == 0 {
			b.WriteString(corpusSeps[r.IntN(len(corpusSeps))])
		}
		out = append(out, b.String())
	}
	return out
}

// naturalCorpus is corpus(n) without the strings on which the Hugging Face
// path is known to differ from llama2.c (see TestLoadHFKnownDifferences):
// runs of three or more equal characters, literal special-token spellings,
// literal U+2581 (read as a space there), NUL bytes, and invalid UTF-8.
func naturalCorpus(n int) []string {
	var out []string
	for _, s := range corpus(n) {
		if hasRun(s, 3) || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") ||
			strings.Contains(s, spaceMarker) || strings.Contains(s, "\x00") || !validUTF8(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// hasRun reports whether s repeats a unit of one to three characters n or
// more times in a row.
func hasRun(s string, n int) bool {
	rs := []rune(s)
	for unit := 1; unit <= 3; unit++ {
		for i := 0; i+unit*n <= len(rs); i++ {
			k := 1
			for k < n && string(rs[i+k*unit:i+(k+1)*unit]) == string(rs[i:i+unit]) {
				k++
			}
			if k >= n {
				return true
			}
		}
	}
	return false
}

// cutPoints returns the lengths at which truncation tests cut a file of n
// bytes: every length in the first and last 256 bytes, every 13th between.
func cutPoints(n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if i < 256 || i >= n-256 || i%13 == 0 {
			out = append(out, i)
		}
	}
	return out
}

// encodeConcurrently encodes texts in each of n goroutines at once and
// returns each one's ids by text (nil for an error).
func encodeConcurrently(tok Tokenizer, texts []string, addBOS bool, n int) [][][]int {
	var wg sync.WaitGroup
	results := make([][][]int, n)
	for g := range results {
		wg.Go(func() {
			for _, text := range texts {
				ids, err := tok.Encode(text, addBOS)
				if err != nil {
					ids = nil
				}
				results[g] = append(results[g], ids)
			}
		})
	}
	wg.Wait()
	return results
}
