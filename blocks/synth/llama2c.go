package synth

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
)

// WriteLlama2C writes the model as a llama2.c float32 checkpoint of the
// given version (0: legacy_export, 1: version1_export of karpathy/llama2.c
// export.py); q/k rows are permuted into adjacent-pair RoPE order as
// export.py does for Hugging Face weights. Weights stored as f16/bf16/q8_0
// in the other formats are written as the float32 values they hold.
func WriteLlama2C(path string, c Config, version int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if version != 0 && version != 1 {
		return fmt.Errorf("%w: llama2.c version %d, want 0 or 1", ErrConfig, version)
	}
	c = c.withDefaults()
	if (c.Arch != ArchLlama && c.Arch != ArchMistral) || c.HeadDim*c.Heads != c.Dim {
		return fmt.Errorf("%w: llama2.c checkpoints hold only the llama architecture with head dim = dim/heads (arch %s, head dim %d)", ErrConfig, c.Arch, c.HeadDim)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := &le{w: bufio.NewWriterSize(f, 1<<20)}
	vocab := int32(c.Vocab)
	if version == 0 && !c.Tied {
		vocab = -vocab // legacy: a negative vocab_size means an unshared classifier
	}
	params := []int32{int32(c.Dim), int32(c.FFN), int32(c.Layers), int32(c.Heads), int32(c.KVHeads), vocab, int32(c.MaxSeqLen)}
	if version == 1 {
		w.u32(0x616b3432) // "ak42"
		w.u32(1)
	}
	for _, p := range params {
		w.u32(uint32(p))
	}
	if version == 1 {
		shared := byte(0)
		if c.Tied {
			shared = 1
		}
		w.bytes([]byte{shared})
		w.pad(256)
	}
	floats := func(v []float32) {
		buf := make([]byte, 0, 4*len(v))
		for _, x := range v {
			u := math.Float32bits(x)
			buf = append(buf, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
		w.bytes(buf)
	}
	perBlock := func(kind int) {
		for b := range c.Layers {
			floats(c.adjacentValues(c.blockTensor(b, kind)))
		}
	}
	switch version {
	case 0:
		floats(c.values(c.globalTensor(kEmbed)))
		perBlock(kAttnNorm)
		for _, k := range []int{kWQ, kWK, kWV, kWO} {
			perBlock(k)
		}
		perBlock(kFFNNorm)
		for _, k := range []int{kW1, kW2, kW3} {
			perBlock(k)
		}
		floats(c.values(c.globalTensor(kNorm)))
		// The legacy RoPE tables freq_cis_real/imag [seq_len][head_size/2],
		// unused by current run.c but part of the layout.
		hd := c.Dim / c.Heads
		re := make([]float32, 0, c.MaxSeqLen*hd/2)
		im := make([]float32, 0, c.MaxSeqLen*hd/2)
		for p := range c.MaxSeqLen {
			for i := range hd / 2 {
				a := float64(p) / math.Pow(c.RopeTheta, float64(2*i)/float64(hd))
				re, im = append(re, float32(math.Cos(a))), append(im, float32(math.Sin(a)))
			}
		}
		floats(re)
		floats(im)
	case 1:
		perBlock(kAttnNorm)
		perBlock(kFFNNorm)
		floats(c.values(c.globalTensor(kNorm)))
		floats(c.values(c.globalTensor(kEmbed)))
		for _, k := range []int{kWQ, kWK, kWV, kWO, kW1, kW2, kW3} {
			perBlock(k)
		}
	}
	if !c.Tied {
		floats(c.values(c.globalTensor(kOutput)))
	}
	return finish(f, w)
}

// WriteLlama2CTokenizer writes the vocabulary of c as a llama2.c
// tokenizer.bin (tokenizer.py export): int32 max_token_length, then per id
// float32 score, int32 byte length and the piece bytes, with real spaces and
// BOS/EOS spelled "\n<s>\n" and "\n</s>\n".
func WriteLlama2CTokenizer(path string, c Config) error {
	pieces, scores, _, err := Vocab(c.Vocab)
	if err != nil {
		return err
	}
	texts := make([]string, len(pieces))
	maxLen := 0
	for i, p := range pieces {
		switch i {
		case bosID:
			p = "\n<s>\n"
		case eosID:
			p = "\n</s>\n"
		}
		texts[i] = strings.ReplaceAll(p, "▁", " ")
		maxLen = max(maxLen, len(texts[i]))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := &le{w: bufio.NewWriter(f)}
	w.u32(uint32(maxLen))
	for i, t := range texts {
		w.u32(math.Float32bits(scores[i]))
		w.u32(uint32(len(t)))
		w.bytes([]byte(t))
	}
	return finish(f, w)
}
