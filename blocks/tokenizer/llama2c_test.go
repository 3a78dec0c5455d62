package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// llama2CBytes builds a tokenizer.bin in memory.
func llama2CBytes(maxLen int32, pieces []string, scores []float32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for i, p := range pieces {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scores[i]))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

func TestLoadLlama2CVocabulary(t *testing.T) {
	path := testenv.SharedFile(t, "models", "stories260K", "tok512.bin")
	tok, err := LoadLlama2C(path)
	require.NoError(t, err)
	require.Equal(t, 512, tok.VocabSize())
	require.Equal(t, 0, tok.Unknown())
	require.True(t, tok.DummyPrefix())
	// Control pieces lose the newlines llama2.c stores around them.
	require.Equal(t, "<s>", tok.Piece(1))
	require.Equal(t, "</s>", tok.Piece(2))
	require.Equal(t, "<0x0A>", tok.Piece(13))
	require.Equal(t, "\n", tok.Decode(0, 13))
	require.Equal(t, "", tok.Decode(0, 1), "control pieces decode to nothing")
	require.Equal(t, "", tok.Decode(0, 512), "out of range")
	require.Equal(t, "", tok.Decode(0, -1), "out of range")

	sized, err := LoadLlama2C(path, WithVocabSize(512))
	require.NoError(t, err)
	require.Equal(t, 512, sized.VocabSize())
	fewer, err := LoadLlama2C(path, WithVocabSize(300))
	require.NoError(t, err)
	require.Equal(t, 300, fewer.VocabSize())
	_, err = LoadLlama2C(path, WithVocabSize(513))
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "entry 512")
	require.ErrorContains(t, err, path)
	_, err = LoadLlama2C(path, WithVocabSize(0))
	require.ErrorIs(t, err, ErrFormat)
}

// TestLoadLlama2CTruncated cuts tok512.bin at many lengths (cutPoints): with the
// vocabulary size given, every cut fails with ErrFormat; reading to EOF, a
// cut inside an entry fails and a cut between entries gives fewer entries.
func TestLoadLlama2CTruncated(t *testing.T) {
	data, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "tok512.bin"))
	require.NoError(t, err)
	for _, n := range cutPoints(len(data)) {
		_, err := parseLlama2C(data[:n], config{vocabSize: 512})
		require.ErrorIs(t, err, ErrFormat, "cut at %d of %d", n, len(data))
		tok, err := parseLlama2C(data[:n], config{})
		if err != nil {
			require.ErrorIs(t, err, ErrFormat, "cut at %d of %d", n, len(data))
			continue
		}
		require.Less(t, tok.VocabSize(), 512, "cut at %d", n)
	}
}

func TestLoadLlama2CErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "4-byte max_token_length"},
		{"zero max length", llama2CBytes(0, []string{"<unk>"}, []float32{0}), "max_token_length 0"},
		{"header only", llama2CBytes(4, nil, nil), "no entries"},
		{"piece longer than max", llama2CBytes(2, []string{"<unk>", "<s>", "</s>"}, []float32{0, 0, 0}), "entry 0 has length 5"},
		{"negative length", append(llama2CBytes(8, []string{"<unk>"}, []float32{0}), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff), "entry 1 has length -1"},
		{"NaN score", llama2CBytes(8, []string{"<unk>"}, []float32{float32(math.NaN())}), "NaN"},
		{"no BOS", llama2CBytes(8, []string{"<unk>"}, []float32{0}), "want BOS and EOS"},
		{"truncated piece", llama2CBytes(8, []string{"<unk>", "<s>", "</s>"}, []float32{0, 0, 0})[:38], "truncated in entry 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "tokenizer.bin")
			require.NoError(t, os.WriteFile(path, tc.data, 0o600))
			_, err := LoadLlama2C(path)
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
	_, err := LoadLlama2C(filepath.Join(dir, "absent.bin"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzParseLlama2C checks that no input panics and that accepted inputs give
// a tokenizer that encodes and decodes.
func FuzzParseLlama2C(f *testing.F) {
	f.Add(llama2CBytes(5, []string{"<unk>", "\n<s>\n", "\n</s>\n", "a", "b", "ab", " "}, []float32{0, 0, 0, -1, -2, -3, -4}))
	f.Add(llama2CBytes(6, []string{"<unk>", "<s>", "</s>", "<0x61>", "<0x20>"}, []float32{0, 0, 0, 0, 0}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parseLlama2C(data, config{})
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		ids, err := tok.Encode("ab a\xffé", true)
		if err != nil {
			if !errors.Is(err, ErrEncode) {
				t.Fatalf("encode error %v is not ErrEncode", err)
			}
			return
		}
		prev := -1
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside [0, %d)", id, tok.VocabSize())
			}
			tok.Decode(prev, id)
			prev = id
		}
	})
}
