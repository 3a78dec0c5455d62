package tokenizer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// benchText is about 4 KB of English prose: section 1 of stories260K's
// REFERENCE.md, repeated.
func benchText(b *testing.B) string {
	_, text := loadStories260KReference(b)
	return strings.Repeat(text+"\n", 6)
}

// BenchmarkEncode32k encodes ~4 KB with the 32k Llama 2 vocabulary (heap
// merges, O(n log n)).
func BenchmarkEncode32k(b *testing.B) {
	tok, err := LoadLlama2C(testenv.SharedFile(b, "models", "llama2-tokenizer-32k", "tokenizer.bin"))
	require.NoError(b, err)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tok.Encode(text, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode32kNaive runs the literal llama2.c port (O(n^2) rescans)
// on the same text, for comparison.
func BenchmarkEncode32kNaive(b *testing.B) {
	tok, err := LoadLlama2C(testenv.SharedFile(b, "models", "llama2-tokenizer-32k", "tokenizer.bin"))
	require.NoError(b, err)
	pieces, scores, _ := tok.Vocab()
	naive := newNaiveLlama2C(pieces, scores)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		naive.encode(text, true)
	}
}

// BenchmarkLoadLlama2C32k loads the 32k tokenizer.bin.
func BenchmarkLoadLlama2C32k(b *testing.B) {
	path := testenv.SharedFile(b, "models", "llama2-tokenizer-32k", "tokenizer.bin")
	for b.Loop() {
		if _, err := LoadLlama2C(path); err != nil {
			b.Fatal(err)
		}
	}
}
