package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Load opens a tokenizer, choosing the loader from the path:
//
//   - a directory: its tokenizer.model, else its tokenizer.json;
//   - *.gguf, or a file starting with the GGUF magic: FromGGUF (a *BPE
//     for tokenizer.ggml.model "llama", a *RankedBPE for "gpt2");
//   - *.json: LoadHF (a *RankedBPE for byte-level files and Gemma 3, which
//     also reads the tokenizer_config.json beside it);
//   - *.model, or a file starting with the protobuf tag of a non-empty
//     ModelProto.pieces (0x0A, then a non-zero length): LoadSentencePiece;
//   - anything else: LoadLlama2C (tokenizer.bin).
//
// Errors are those of the chosen loader; a directory without either file
// gives an error wrapping os.ErrNotExist.
func Load(path string) (Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if st.IsDir() {
		for _, name := range []string{"tokenizer.model", "tokenizer.json"} {
			p := filepath.Join(path, name)
			if _, err := os.Stat(p); err == nil {
				return Load(p)
			}
		}
		return nil, fmt.Errorf("tokenizer: directory %s has neither tokenizer.model nor tokenizer.json: %w", path, os.ErrNotExist)
	}
	switch kind, err := sniff(path); {
	case err != nil:
		return nil, err
	case kind == kindGGUF:
		return FromGGUF(path)
	case kind == kindHF:
		return LoadHF(path)
	case kind == kindSentencePiece:
		return asTokenizer(LoadSentencePiece(path))
	default:
		return asTokenizer(LoadLlama2C(path))
	}
}

// asTokenizer keeps a nil *BPE from becoming a non-nil Tokenizer.
func asTokenizer(t *BPE, err error) (Tokenizer, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}

type fileKind int

const (
	kindLlama2C fileKind = iota
	kindGGUF
	kindHF
	kindSentencePiece
)

// sniff tells the kind of a tokenizer file by its name, else its first bytes.
func sniff(path string) (fileKind, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".gguf":
		return kindGGUF, nil
	case ".json":
		return kindHF, nil
	case ".model":
		return kindSentencePiece, nil
	case ".bin":
		return kindLlama2C, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("tokenizer: read %s: %w", path, err)
	}
	head = head[:n]
	switch {
	case bytes.Equal(head, []byte("GGUF")):
		return kindGGUF, nil
	case len(head) > 0 && head[0] == '{':
		return kindHF, nil
	case len(head) > 1 && head[0] == 0x0A && head[1] != 0:
		// ModelProto field 1 (pieces), length-delimited, non-empty; a
		// tokenizer.bin with max_token_length 10 starts 0A 00.
		return kindSentencePiece, nil
	}
	return kindLlama2C, nil
}
