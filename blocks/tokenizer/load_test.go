package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/testenv"
)

// TestLoad opens every kind of tokenizer by path (by name and, renamed, by
// content) and by directory, and checks the kind chosen by its behaviour.
func TestLoad(t *testing.T) {
	shared := testenv.SharedDir(t)
	k32 := filepath.Join(shared, "models", "llama2-tokenizer-32k")
	s260 := filepath.Join(shared, "models", "stories260K")
	hfPath, _ := hf32k(t)
	tmp := t.TempDir()
	copyTo := func(src, name string) string {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		dst := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o700))
		require.NoError(t, os.WriteFile(dst, data, 0o600))
		return dst
	}
	hfDir := filepath.Dir(copyTo(hfPath, "hfdir/tokenizer.json"))
	spDir := filepath.Dir(copyTo(filepath.Join(k32, "tokenizer.model"), "spdir/tokenizer.model"))
	copyTo(hfPath, "spdir/tokenizer.json") // tokenizer.model wins
	cases := []struct {
		name  string
		path  string
		vocab int
		isBPE bool
	}{
		{"tokenizer.bin", filepath.Join(k32, "tokenizer.bin"), 32000, true},
		{"tokenizer.model", filepath.Join(k32, "tokenizer.model"), 32000, true},
		{"tokenizer.json", hfPath, 32000, false},
		{"tok512.bin", filepath.Join(s260, "tok512.bin"), 512, true},
		{"gguf", filepath.Join(s260, "stories260K.gguf"), 512, true},
		{"sniffed protobuf", copyTo(filepath.Join(k32, "tokenizer.model"), "sp-noext"), 32000, true},
		{"sniffed GGUF", copyTo(filepath.Join(s260, "stories260K.gguf"), "gguf-noext"), 512, true},
		{"sniffed JSON", copyTo(hfPath, "json-noext"), 32000, false},
		{"sniffed llama2.c", copyTo(filepath.Join(s260, "tok512.bin"), "bin-noext"), 512, true},
		{"directory with tokenizer.json", hfDir, 32000, false},
		{"directory with both", spDir, 32000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Load(tc.path)
			require.NoError(t, err)
			require.Equal(t, tc.vocab, tok.VocabSize())
			_, isBPE := tok.(*BPE)
			require.Equal(t, tc.isBPE, isBPE)
			want := []int{1, 306, 4658, 278, 6593, 310, 2834, 338}
			if tc.vocab == 512 {
				want = []int{1, 403, 407, 261, 378}
				got, err := tok.Encode("Once upon a time", true)
				require.NoError(t, err)
				require.Equal(t, want, got)
				return
			}
			got, err := tok.Encode("I believe the meaning of life is", true)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}

	_, err := Load(filepath.Join(tmp, "absent"))
	require.ErrorIs(t, err, os.ErrNotExist)
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o700))
	_, err = Load(empty)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "neither tokenizer.model nor tokenizer.json")
	garbage := filepath.Join(tmp, "garbage.bin")
	require.NoError(t, os.WriteFile(garbage, bytes.Repeat([]byte{0xff}, 3), 0o600))
	tok, err := Load(garbage)
	require.ErrorIs(t, err, ErrFormat)
	require.Nil(t, tok, "a failed load returns a nil interface")
}
