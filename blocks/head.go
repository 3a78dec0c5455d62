package blocks

import (
	"fmt"
	"math"

	"github.com/swarmllm/swarm/blocks/tokenizer"
	"github.com/swarmllm/swarm/swarm"
)

// cpuHead is the client side of a model on the CPU: token embeddings
// [Vocab, DModel], final RMSNorm [DModel] and LM head [Vocab, DModel] (the
// same matrix as the embeddings when they are tied). It is read-only and
// safe for concurrent use.
type cpuHead struct {
	info   swarm.ModelInfo
	params archParams // embedding scale, final soft-capping
	embed  *matrix
	norm   []float32
	output *matrix
	tok    tokenizer.Tokenizer // nil when the model came without one
	mapped int                 // matrices in place in a file mapping
}

var _ Head = (*cpuHead)(nil)

// Info describes the model.
func (h *cpuHead) Info() swarm.ModelInfo { return h.info }

// Tokenizer is the model's tokenizer, or nil when none was found (llama2.c
// checkpoints without a tokenizer.bin beside them and no WithTokenizer).
func (h *cpuHead) Tokenizer() tokenizer.Tokenizer { return h.tok }

// Embed looks up tokens and returns hidden states [len(tokens), DModel],
// scaled by the architecture's embedding scale (Gemma: sqrt(DModel)). It
// returns an error wrapping ErrArgument for an id outside [0, Vocab).
func (h *cpuHead) Embed(tokens []int) ([]float32, error) {
	d := h.info.DModel
	out := make([]float32, len(tokens)*d)
	for i, t := range tokens {
		if t < 0 || t >= h.info.Vocab {
			return nil, fmt.Errorf("%w: token id %d at index %d, want 0..%d", ErrArgument, t, i, h.info.Vocab-1)
		}
		h.embed.rowF32(t, out[i*d:(i+1)*d])
	}
	if sc := h.params.embedScale; sc != 0 {
		for i := range out {
			out[i] *= sc
		}
	}
	return out, nil
}

// Logits applies the final RMSNorm and the LM head to one hidden state
// [DModel] and returns logits [Vocab], soft-capped as c*tanh(logit/c) when
// the model sets a final soft-cap c. It returns an error wrapping
// ErrArgument if len(hidden) != DModel.
func (h *cpuHead) Logits(hidden []float32) ([]float32, error) {
	d := h.info.DModel
	if len(hidden) != d {
		return nil, fmt.Errorf("%w: hidden state of %d values, want d_model = %d", ErrArgument, len(hidden), d)
	}
	x := make([]float32, d)
	rmsnorm(x, hidden, h.norm, float32(h.info.NormEps))
	logits := make([]float32, h.info.Vocab)
	mulMats([][]float32{logits}, []*matrix{h.output}, x, 1)
	if c := h.params.finalSoftcap; c > 0 {
		for i, v := range logits {
			logits[i] = float32(c * math.Tanh(float64(v)/c))
		}
	}
	return logits, nil
}
