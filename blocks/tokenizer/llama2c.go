package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// LoadLlama2C reads a llama2.c tokenizer.bin (the export of tokenizer.py in
// https://github.com/karpathy/llama2.c, read by run.c's build_tokenizer):
//
//	int32 max_token_length
//	per id: float32 score, int32 length, length bytes of piece text
//
// little-endian, spaces as real 0x20 bytes, BOS and EOS stored as
// "\n<s>\n" and "\n</s>\n". The vocabulary size is the number of entries up
// to EOF, or exactly n with WithVocabSize(n) (llama2.c takes it from the
// checkpoint header; bytes after the n-th entry are then ignored). BOS and
// EOS are the ids of those pieces (1 and 2 if absent), unknown the id of
// "<unk>" (or none); the dummy prefix is on, as in llama2.c, unless
// WithDummyPrefix says otherwise. A truncated or inconsistent file gives
// ErrFormat naming the file, the entry and what was expected.
func LoadLlama2C(path string, opts ...Option) (*BPE, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: read llama2.c tokenizer: %w", err)
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	t, err := parseLlama2C(data, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// parseLlama2C decodes the bytes of a tokenizer.bin.
func parseLlama2C(data []byte, c config) (*BPE, error) {
	const header = 4
	if len(data) < header {
		return nil, fmt.Errorf("%w: llama2.c tokenizer: %d bytes, want at least a 4-byte max_token_length header", ErrFormat, len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen <= 0 {
		return nil, fmt.Errorf("%w: llama2.c tokenizer: max_token_length %d, want > 0", ErrFormat, maxLen)
	}
	var (
		pieces []string
		scores []float32
	)
	if c.vocabSize > 0 {
		// Cap the preallocation by what the file can hold (8 bytes an entry).
		n := min(c.vocabSize, (len(data)-header)/8)
		pieces, scores = make([]string, 0, n), make([]float32, 0, n)
	}
	off := header
	for id := 0; c.vocabSize == 0 || id < c.vocabSize; id++ {
		if off == len(data) && c.vocabSize == 0 {
			break
		}
		if len(data)-off < 8 {
			return nil, fmt.Errorf("%w: llama2.c tokenizer: truncated at entry %d (byte offset %d): %d bytes left, want 8 for score and length%s",
				ErrFormat, id, off, len(data)-off, wantEntries(c.vocabSize))
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		off += 8
		if n < 0 || n > maxLen {
			return nil, fmt.Errorf("%w: llama2.c tokenizer: entry %d has length %d, want 0..max_token_length %d", ErrFormat, id, n, maxLen)
		}
		if len(data)-off < int(n) {
			return nil, fmt.Errorf("%w: llama2.c tokenizer: truncated in entry %d (byte offset %d): %d bytes left, want %d piece bytes",
				ErrFormat, id, off, len(data)-off, n)
		}
		if math.IsNaN(float64(score)) {
			return nil, fmt.Errorf("%w: llama2.c tokenizer: entry %d has score NaN, want a number", ErrFormat, id)
		}
		pieces = append(pieces, string(data[off:off+int(n)]))
		scores = append(scores, score)
		off += int(n)
	}
	if len(pieces) == 0 {
		return nil, fmt.Errorf("%w: llama2.c tokenizer: no entries after the header", ErrFormat)
	}
	bos := findPiece(pieces, 1, "\n<s>\n", "<s>")
	eos := findPiece(pieces, 2, "\n</s>\n", "</s>")
	unk := findPiece(pieces, -1, "<unk>")
	if bos >= len(pieces) || eos >= len(pieces) {
		return nil, fmt.Errorf("%w: llama2.c tokenizer: %d entries and no <s>/</s> pieces, want BOS and EOS (ids 1 and 2) in the vocabulary", ErrFormat, len(pieces))
	}
	// Control pieces are stored with newlines around them for printing;
	// keep their SentencePiece names.
	pieces[bos] = strings.Trim(pieces[bos], "\n")
	pieces[eos] = strings.Trim(pieces[eos], "\n")
	opts := []Option{WithDummyPrefix(c.dummyPrefix == nil || *c.dummyPrefix)}
	return NewBPE(pieces, scores, nil, bos, eos, unk, opts...)
}

func wantEntries(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d entries expected)", n)
}

// findPiece returns the lowest id of the first of names found in pieces,
// else def.
func findPiece(pieces []string, def int, names ...string) int {
	for _, name := range names {
		for id, p := range pieces {
			if p == name {
				return id
			}
		}
	}
	return def
}
