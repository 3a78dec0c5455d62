package tokenizer

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// llama2Reference is REFERENCE.md of ../shared/models/llama2-tokenizer-32k:
// the expected ids of llama2.c's test.c (taken by its authors from Meta's
// Python tokenizer), quoted from C string literals.
var llama2Reference = []struct {
	text string
	want []int
}{
	{"", []int{1}},
	{"I believe the meaning of life is", []int{1, 306, 4658, 278, 6593, 310, 2834, 338}},
	{"Simply put, the theory of relativity states that ", []int{1, 3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871}},
}

// stories260KEncodings is REFERENCE.md section 3 of ../shared/models/stories260K
// (helper-computed, a debugging aid).
var stories260KEncodings = []struct {
	text string
	want []int
}{
	{"Once upon a time", []int{1, 403, 407, 261, 378}},
	{"Lily", []int{1, 317}},
}

// loadStories260KReference returns, from the shared REFERENCE.md, the 256
// greedy ids of section 3 and section 1's text (llama2.c's published output,
// the third-party oracle) without run.c's trailing newline.
func loadStories260KReference(t testing.TB) (ids []int, text string) {
	t.Helper()
	f, err := os.Open(testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"))
	require.NoError(t, err)
	defer f.Close()
	var (
		sc      = bufio.NewScanner(f)
		inText  bool
		lines   []string
		idsNext bool
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "$ ./run stories260K/stories260K.bin") && text == "":
			inText = true
		case inText && line == "```":
			inText = false
			text = strings.Join(lines, "\n")
		case inText:
			lines = append(lines, line)
		case strings.Contains(line, "The 256 greedy token ids of section 1"):
			idsNext = true
		case idsNext:
			idsNext = false
			for _, f := range strings.Fields(line) {
				id, err := strconv.Atoi(f)
				require.NoError(t, err, "id %q in REFERENCE.md", f)
				ids = append(ids, id)
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, ids, 256, "ids of REFERENCE.md section 3")
	require.True(t, strings.HasPrefix(text, "Once upon a time, there was a little girl named Lily."), "text of section 1: %q", text)
	require.True(t, strings.HasSuffix(text, "We can help you."), "text of section 1: %q", text)
	return ids, text
}

func TestLlama2_32kReference(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "llama2-tokenizer-32k")
	loaders := map[string]func() (Tokenizer, error){
		"tokenizer.bin":   func() (Tokenizer, error) { return LoadLlama2C(dir + "/tokenizer.bin") },
		"tokenizer.model": func() (Tokenizer, error) { return LoadSentencePiece(dir + "/tokenizer.model") },
	}
	for name, load := range loaders {
		tok, err := load()
		require.NoError(t, err, name)
		require.Equal(t, 32000, tok.VocabSize(), name)
		require.Equal(t, 1, tok.BOS(), name)
		require.Equal(t, 2, tok.EOS(), name)
		for _, tc := range llama2Reference {
			t.Run(name+"/"+tc.text, func(t *testing.T) {
				got, err := tok.Encode(tc.text, true)
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			})
		}
	}
}

func TestStories260KReference(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	ids, text := loadStories260KReference(t)
	loaders := map[string]func() (Tokenizer, error){
		"tok512.bin":       func() (Tokenizer, error) { return LoadLlama2C(dir + "/tok512.bin") },
		"stories260K.gguf": func() (Tokenizer, error) { return FromGGUF(dir + "/stories260K.gguf") },
	}
	for name, load := range loaders {
		tok, err := load()
		require.NoError(t, err, name)
		require.Equal(t, 512, tok.VocabSize(), name)
		for _, tc := range stories260KEncodings {
			t.Run(name+"/encode/"+tc.text, func(t *testing.T) {
				got, err := tok.Encode(tc.text, true)
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			})
		}
		t.Run(name+"/decode", func(t *testing.T) {
			var b strings.Builder
			prev := tok.BOS()
			for _, id := range ids {
				b.WriteString(tok.Decode(prev, id))
				prev = id
			}
			require.Equal(t, text, b.String())
		})
	}
}
