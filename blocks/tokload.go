package blocks

import (
	"path/filepath"

	"github.com/swarmllm/swarm/blocks/tokenizer"
)

// The tokenizer loaders each model format uses (blocks/tokenizer). vocab is
// the model's vocabulary size. They return the interface only on success, so
// that a nil *tokenizer.BPE never becomes a non-nil Tokenizer.

// loadTokenizerFile loads a tokenizer file named by WithTokenizer or found
// in a Hugging Face directory with tokenizer.Load (which picks the loader
// from the name and content); llama2.c .bin files are read with exactly
// vocab entries, as run.c does.
func loadTokenizerFile(path string, vocab int) (tokenizer.Tokenizer, error) {
	if filepath.Ext(path) == ".bin" {
		return loadLlama2CTokenizer(path, vocab)
	}
	return tokenizer.Load(path)
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
