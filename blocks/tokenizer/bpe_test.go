package tokenizer

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// tinyVocab is a hand-made vocabulary: <unk>, <s>, </s>, byte pieces for
// 'x' (0x78) and 0xC3, then normal pieces with merge scores.
func tinyVocab() (pieces []string, scores []float32) {
	entries := []struct {
		piece string
		score float32
	}{
		{"<unk>", 0}, {"<s>", 0}, {"</s>", 0}, // 0 1 2
		{"<0x78>", 0}, {"<0xC3>", 0}, // 3 4
		{"\u2581", -100}, {"a", -100}, {"b", -100}, {"c", -100}, {"é", -100}, // 5..9
		{"ab", -5}, {"bc", -5}, // 10 11: equal scores, leftmost wins
		{"\u2581a", -3}, {"abc", -1}, {"\u2581ab", -2}, // 12 13 14
		{"cc", -1e10}, // 15: at llama2.c's floor, never merged
	}
	for _, e := range entries {
		pieces = append(pieces, e.piece)
		scores = append(scores, e.score)
	}
	return pieces, scores
}

func TestBPEEncodeTiny(t *testing.T) {
	pieces, scores := tinyVocab()
	tok, err := NewBPE(pieces, scores, nil, 1, 2, 0)
	require.NoError(t, err)
	noPrefix, err := NewBPE(pieces, scores, nil, 1, 2, 0, WithDummyPrefix(false))
	require.NoError(t, err)
	noUnk, err := NewBPE(pieces, scores, nil, 1, 2, -1, WithDummyPrefix(false))
	require.NoError(t, err)
	cases := []struct {
		name string
		tok  *BPE
		text string
		bos  bool
		want []int
	}{
		{"empty with BOS", tok, "", true, []int{1}},
		{"empty without BOS", tok, "", false, []int{}},
		{"dummy prefix merges", tok, "a", true, []int{1, 12}},
		{"best score first", tok, "ab", false, []int{14}},                // ▁a (-3) then ▁ab (-2)
		{"no prefix", noPrefix, "abc", false, []int{13}},                 // ab (-5, leftmost of a tie) then abc (-1)
		{"tie goes left", noPrefix, "bcab", false, []int{11, 10}},        // bc and ab both -5; neither merges further
		{"floor score never merges", noPrefix, "cc", false, []int{8, 8}}, // cc scores -1e10
		{"character piece", noPrefix, "é", false, []int{9}},
		{"byte fallback", noPrefix, "x", false, []int{3}},
		{"unknown for missing byte piece", noPrefix, "y", false, []int{0}},
		{"partial byte pieces", noPrefix, "\xc3y", false, []int{4, 0}},
		{"control text is plain text", noPrefix, "<s>", false, []int{0, 0, 0}},
		{"spaces", tok, " a", false, []int{5, 12}},
		{"U+2581 is not a space", noPrefix, "\u2581", false, []int{0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tok.Encode(tc.text, tc.bos)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err = noUnk.Encode("y", false)
	require.ErrorIs(t, err, ErrEncode)
	require.ErrorContains(t, err, "0x79")
}

func TestBPEDecodeTiny(t *testing.T) {
	pieces, scores := tinyVocab()
	tok, err := NewBPE(pieces, scores, nil, 1, 2, 0)
	require.NoError(t, err)
	cases := []struct {
		name        string
		prev, token int
		want        string
	}{
		{"space kept", 6, 12, " a"},
		{"space dropped after BOS", 1, 12, "a"},
		{"lone space dropped after BOS", 1, 5, ""},
		{"byte piece", 6, 3, "x"},
		{"partial UTF-8 byte", 1, 4, "\xc3"},
		{"BOS decodes to nothing", 2, 1, ""},
		{"EOS decodes to nothing", 6, 2, ""},
		{"unknown is printed", 6, 0, "<unk>"},
		{"out of range", 6, 16, ""},
		{"negative", 6, -3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tok.Decode(tc.prev, tc.token))
		})
	}
	require.Equal(t, "abc", tok.DecodeAll([]int{1, 12, 7, 8}))
}

func TestNewBPEErrors(t *testing.T) {
	pieces, scores := tinyVocab()
	cases := []struct {
		name   string
		pieces []string
		scores []float32
		types  []int32
		bos    int
		want   string
	}{
		{"empty", nil, nil, nil, 1, "empty vocabulary"},
		{"score count", pieces, scores[:3], nil, 1, "3 scores for 16 pieces"},
		{"type count", pieces, scores, []int32{1}, 1, "1 piece types for 16 pieces"},
		{"BOS range", pieces, scores, nil, 16, "BOS id 16 outside"},
		{"bad type", pieces[:3], scores[:3], []int32{2, 3, 9}, 1, "type 9"},
		{"bad byte piece", []string{"<unk>", "<s>", "</s>", "<0xZZ>"}, []float32{0, 0, 0, 0}, []int32{2, 3, 3, 6}, 1, "want <0xXX>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewBPE(tc.pieces, tc.scores, tc.types, tc.bos, 2, 0)
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// naiveLlama2C is a line-by-line port of llama2.c's encode (run.c): it
// rescans every adjacent pair after each merge (O(n^2)) and looks pieces up
// among all ids, whatever their type. pieces use real spaces.
type naiveLlama2C struct {
	pieces []string
	scores []float32
	lookup map[string]int
}

func newNaiveLlama2C(pieces []string, scores []float32) *naiveLlama2C {
	lookup := make(map[string]int, len(pieces))
	for id := len(pieces) - 1; id >= 0; id-- {
		lookup[pieces[id]] = id
	}
	return &naiveLlama2C{pieces, scores, lookup}
}

func (n *naiveLlama2C) encode(text string, bos bool) []int {
	pieces, scores, lookup := n.pieces, n.scores, n.lookup
	var tokens []int
	if bos {
		tokens = append(tokens, 1)
	}
	if text != "" {
		tokens = append(tokens, lookup[" "])
	}
	buf := []byte{}
	for i := 0; i < len(text); i++ {
		if text[i]&0xC0 != 0x80 {
			buf = buf[:0]
		}
		buf = append(buf, text[i])
		if i+1 < len(text) && text[i+1]&0xC0 == 0x80 && len(buf) < 4 {
			continue
		}
		if id, ok := lookup[string(buf)]; ok {
			tokens = append(tokens, id)
		} else {
			for _, b := range buf {
				tokens = append(tokens, int(b)+3)
			}
		}
		buf = buf[:0]
	}
	for {
		best, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 0; i+1 < len(tokens); i++ {
			id, ok := lookup[pieces[tokens[i]]+pieces[tokens[i+1]]]
			if ok && scores[id] > best {
				best, bestID, bestIdx = scores[id], id, i
			}
		}
		if bestIdx < 0 {
			break
		}
		tokens[bestIdx] = bestID
		tokens = append(tokens[:bestIdx+1], tokens[bestIdx+2:]...)
	}
	return tokens
}

// TestBPEMatchesNaiveLlama2C checks the heap-based merge against the
// literal port of llama2.c over the corpus, for both real vocabularies.
func TestBPEMatchesNaiveLlama2C(t *testing.T) {
	for _, rel := range [][]string{
		{"models", "stories260K", "tok512.bin"},
		{"models", "llama2-tokenizer-32k", "tokenizer.bin"},
	} {
		path := testenv.SharedFile(t, rel...)
		tok, err := LoadLlama2C(path)
		require.NoError(t, err)
		// llama2.c's own strings: BOS and EOS with their newlines.
		pieces, scores, _ := tok.Vocab()
		pieces[1], pieces[2] = "\n<s>\n", "\n</s>\n"
		naive := newNaiveLlama2C(pieces, scores)
		for i, text := range corpus(300) {
			if hasNUL(text) {
				continue // a C string ends at NUL
			}
			got, err := tok.Encode(text, true)
			require.NoError(t, err)
			require.Equal(t, naive.encode(text, true), got, "%s: corpus[%d] %q", filepath.Base(path), i, text)
		}
	}
}

func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// TestBPERoundTrip decodes every corpus encoding back to its text: after BOS
// the dummy-prefix space is dropped, byte pieces restore any byte sequence.
func TestBPERoundTrip(t *testing.T) {
	tok, err := LoadLlama2C(testenv.SharedFile(t, "models", "llama2-tokenizer-32k", "tokenizer.bin"))
	require.NoError(t, err)
	for i, text := range corpus(300) {
		ids, err := tok.Encode(text, true)
		require.NoError(t, err)
		require.Equal(t, text, tok.DecodeAll(ids), "corpus[%d] %q", i, text)
	}
}

func TestBPEConcurrent(t *testing.T) {
	tok, err := LoadLlama2C(testenv.SharedFile(t, "models", "llama2-tokenizer-32k", "tokenizer.bin"))
	require.NoError(t, err)
	texts := corpus(50)
	want := make([][]int, len(texts))
	for i, text := range texts {
		want[i], err = tok.Encode(text, true)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range texts {
				j := (i + g*7) % len(texts)
				got, err := tok.Encode(texts[j], true)
				if err != nil || fmt.Sprint(got) != fmt.Sprint(want[j]) {
					errs <- fmt.Errorf("goroutine %d text %d: got %v, %v; want %v", g, j, got, err, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
