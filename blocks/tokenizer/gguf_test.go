package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// TestFromGGUFMatchesLlama2C checks SOURCE.md's claim that the GGUF's
// tokenizer equals tok512.bin (pieces with U+2581 for space, same scores).
func TestFromGGUFMatchesLlama2C(t *testing.T) {
	dir := testenv.SharedFile(t, "models", "stories260K")
	g := sentencePieceGGUF(t, filepath.Join(dir, "stories260K.gguf"))
	b, err := LoadLlama2C(filepath.Join(dir, "tok512.bin"))
	require.NoError(t, err)
	gp, gs, gt := g.Vocab()
	bp, bs, bt := b.Vocab()
	require.Equal(t, bp, gp)
	require.Equal(t, bs, gs)
	require.Equal(t, bt, gt, "types inferred for the .bin equal the GGUF's token_type")
	require.Equal(t, b.BOS(), g.BOS())
	require.Equal(t, b.EOS(), g.EOS())
	require.Equal(t, b.Unknown(), g.Unknown())
	require.True(t, g.DummyPrefix())
}

// TestFromGGUFTruncated cuts the GGUF inside its metadata (which ends before
// the tensor data at byte 14,176): every cut fails with ErrFormat.
func TestFromGGUFTruncated(t *testing.T) {
	data, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "stories260K.gguf"))
	require.NoError(t, err)
	dir := t.TempDir()
	for _, n := range []int{0, 3, 4, 8, 16, 24, 100, 1000, 4000, 8000, 12000, 13500} {
		path := filepath.Join(dir, "cut.gguf")
		require.NoError(t, os.WriteFile(path, data[:n], 0o600))
		_, err := FromGGUF(path)
		require.ErrorIs(t, err, ErrFormat, "cut at %d", n)
		require.ErrorContains(t, err, path)
	}
}

func TestFromGGUFNotGGUF(t *testing.T) {
	path := testenv.SharedFile(t, "models", "stories260K", "tok512.bin")
	_, err := FromGGUF(path)
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, path)
}

// sentencePieceGGUF loads a GGUF tokenizer that must be a *BPE.
func sentencePieceGGUF(t *testing.T, path string, opts ...Option) *BPE {
	t.Helper()
	tok, err := FromGGUF(path, opts...)
	require.NoError(t, err)
	b, ok := tok.(*BPE)
	require.True(t, ok, "%T, want *BPE", tok)
	return b
}

// ggufKV is one metadata entry of a hand-built GGUF file.
type ggufKV struct {
	key   string
	typ   uint32 // GGUF value type: 4 uint32, 5 int32, 6 float32, 7 bool, 8 string, 9 array
	value any    // uint32, int32, float32, bool, string, []string, []float32, []int32
}

// ggufBytes lays out a GGUF file with no tensors (GGUF spec,
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic,
// version, tensor count, metadata count, then key/type/value triples;
// version 1 uses 32-bit lengths and counts.
func ggufBytes(version uint32, kvs []ggufKV) []byte {
	le := binary.LittleEndian
	n := func(b []byte, v int) []byte {
		if version == 1 {
			return le.AppendUint32(b, uint32(v))
		}
		return le.AppendUint64(b, uint64(v))
	}
	str := func(b []byte, s string) []byte { return append(n(b, len(s)), s...) }
	b := append([]byte("GGUF"), 0, 0, 0, 0)
	le.PutUint32(b[4:], version)
	b = n(b, 0)
	b = n(b, len(kvs))
	for _, kv := range kvs {
		b = str(b, kv.key)
		b = le.AppendUint32(b, kv.typ)
		switch v := kv.value.(type) {
		case uint32:
			b = le.AppendUint32(b, v)
		case int32:
			b = le.AppendUint32(b, uint32(v))
		case bool:
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case string:
			b = str(b, v)
		case []string:
			b = n(le.AppendUint32(b, 8), len(v))
			for _, s := range v {
				b = str(b, s)
			}
		case float32:
			b = le.AppendUint32(b, math.Float32bits(v))
		case []float32:
			b = n(le.AppendUint32(b, 6), len(v))
			for _, f := range v {
				b = le.AppendUint32(b, math.Float32bits(f))
			}
		case []int32:
			b = n(le.AppendUint32(b, 5), len(v))
			for _, x := range v {
				b = le.AppendUint32(b, uint32(x))
			}
		}
	}
	return b
}

// TestFromGGUFSynthetic covers metadata variants on hand-built files:
// whitespace-only and space-padded pieces survive (the parser library trims
// strings), GGUF v1/v2 layouts, defaults, add_space_prefix, and errors.
func TestFromGGUFSynthetic(t *testing.T) {
	tokens := []string{"<unk>", "<s>", "</s>", "<0x41>", "\t", "\u2581x", "x\u00a0", " ", "\u2581"}
	scores := []float32{0, 0, 0, 0, -1, -2, -3, -4, -5}
	types := []int32{2, 3, 3, 6, 1, 1, 1, 1, 1}
	base := func(model string) []ggufKV {
		return []ggufKV{
			{"general.architecture", 8, "llama"},
			{"tokenizer.ggml.model", 8, model},
			{"tokenizer.ggml.tokens", 9, tokens},
			{"tokenizer.ggml.scores", 9, scores},
			{"tokenizer.ggml.token_type", 9, types},
			{"tokenizer.ggml.bos_token_id", 4, uint32(1)},
			{"tokenizer.ggml.eos_token_id", 4, uint32(2)},
		}
	}
	dir := t.TempDir()
	write := func(version uint32, kvs []ggufKV) string {
		p := filepath.Join(dir, "m.gguf")
		require.NoError(t, os.WriteFile(p, ggufBytes(version, kvs), 0o600))
		return p
	}
	for _, version := range []uint32{1, 2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			tok := sentencePieceGGUF(t, write(version, base("llama")))
			pieces, gotScores, gotTypes := tok.Vocab()
			require.Equal(t, []string{"<unk>", "<s>", "</s>", "<0x41>", "\t", " x", "x\u00a0", " ", " "}, pieces)
			require.Equal(t, scores, gotScores)
			require.Equal(t, types, gotTypes)
			require.True(t, tok.DummyPrefix())
			ids, err := tok.Encode("A\t", false)
			require.NoError(t, err)
			require.Equal(t, []int{7, 3, 4}, ids, "dummy space, byte fallback for A, tab piece")
		})
	}
	without := func(kvs []ggufKV, key string) []ggufKV {
		var out []ggufKV
		for _, kv := range kvs {
			if kv.key != key {
				out = append(out, kv)
			}
		}
		return out
	}
	with := func(kvs []ggufKV, add ...ggufKV) []ggufKV {
		for _, a := range add {
			kvs = append(without(kvs, a.key), a)
		}
		return kvs
	}
	t.Run("defaults", func(t *testing.T) {
		kvs := without(without(without(without(base("llama"), "tokenizer.ggml.scores"), "tokenizer.ggml.token_type"),
			"tokenizer.ggml.bos_token_id"), "tokenizer.ggml.eos_token_id")
		tok := sentencePieceGGUF(t, write(3, kvs))
		_, gotScores, gotTypes := tok.Vocab()
		require.Equal(t, make([]float32, len(tokens)), gotScores)
		require.Equal(t, []int32{2, 3, 3, 6, 1, 1, 1, 1, 1}, gotTypes, "types inferred")
		require.Equal(t, []int{1, 2, 0}, []int{tok.BOS(), tok.EOS(), tok.Unknown()})
	})
	t.Run("add_space_prefix", func(t *testing.T) {
		path := write(3, with(base("llama"), ggufKV{"tokenizer.ggml.add_space_prefix", 7, false}))
		require.False(t, sentencePieceGGUF(t, path).DummyPrefix())
		require.True(t, sentencePieceGGUF(t, path, WithDummyPrefix(true)).DummyPrefix())
	})
	errCases := []struct {
		name string
		kvs  []ggufKV
		is   error
		want string
	}{
		{"gpt2 without merges", base("gpt2"), ErrFormat, "no metadata key tokenizer.ggml.merges"},
		{"t5", base("t5"), ErrUnsupported, `"t5"`},
		{"no model", without(base("llama"), "tokenizer.ggml.model"), ErrFormat, "no metadata key tokenizer.ggml.model"},
		{"model not a string", with(base("llama"), ggufKV{"tokenizer.ggml.model", 4, uint32(1)}), ErrFormat, "want string"},
		{"no tokens", without(base("llama"), "tokenizer.ggml.tokens"), ErrFormat, "no metadata key tokenizer.ggml.tokens"},
		{"tokens of ints", with(base("llama"), ggufKV{"tokenizer.ggml.tokens", 9, []int32{1, 2}}), ErrFormat, "want"},
		{"scores too short", with(base("llama"), ggufKV{"tokenizer.ggml.scores", 9, []float32{0}}), ErrFormat, "1 scores for 9 pieces"},
		{"BOS out of range", with(base("llama"), ggufKV{"tokenizer.ggml.bos_token_id", 4, uint32(99)}), ErrFormat, "BOS id 99"},
		{"BOS not a number", with(base("llama"), ggufKV{"tokenizer.ggml.bos_token_id", 8, "one"}), ErrFormat, "want an integer"},
		{"space prefix not bool", with(base("llama"), ggufKV{"tokenizer.ggml.add_space_prefix", 8, "yes"}), ErrFormat, "want bool"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			path := write(3, tc.kvs)
			_, err := FromGGUF(path)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
}
