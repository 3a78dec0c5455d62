package blocks

import (
	"fmt"
	"path/filepath"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// The tokenizer loaders each model format uses (blocks/tokenizer). vocab is
// the model's vocabulary size. They return the interface only on success, so
// that a nil *tokenizer.BPE never becomes a non-nil Tokenizer.

// loadTokenizerFile loads a tokenizer file named by WithTokenizer or found
// in a Hugging Face directory, choosing the loader from the file name.
func loadTokenizerFile(path string, vocab int) (tokenizer.Tokenizer, error) {
	switch filepath.Ext(path) {
	case ".bin":
		return loadLlama2CTokenizer(path, vocab)
	case ".gguf":
		return loadGGUFTokenizer(path, vocab)
	case ".model":
		t, err := tokenizer.LoadSentencePiece(path)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, fmt.Errorf("blocks: tokenizer %s: this kind of tokenizer file is not supported yet", path)
}

// loadLlama2CTokenizer loads a llama2.c tokenizer.bin with exactly vocab
// entries, as run.c does.
func loadLlama2CTokenizer(path string, vocab int) (tokenizer.Tokenizer, error) {
	t, err := tokenizer.LoadLlama2C(path, tokenizer.WithVocabSize(vocab))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// loadGGUFTokenizer loads the tokenizer embedded in a GGUF file.
func loadGGUFTokenizer(path string, _ int) (tokenizer.Tokenizer, error) {
	t, err := tokenizer.FromGGUF(path)
	if err != nil {
		return nil, err
	}
	return t, nil
}
