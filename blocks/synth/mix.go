package synth

import (
	"fmt"
	"strings"

	"github.com/swarmllm/swarm/swarm"
)

// Mix names a llama.cpp quantization recipe that varies the dtype by
// tensor ("" for one dtype everywhere).
type Mix string

// MixQ4_K_M is llama.cpp's Q4_K_M (llama-quant.cpp, LLAMA_FTYPE_MOSTLY_Q4_K_M):
// matrices Q4_K, except the LM head (output.weight) and, in the blocks
// use_more_bits picks (the first and last eighth and every third block
// between), attn_v and ffn_down, which are Q6_K; 1-D tensors F32.
const MixQ4_K_M Mix = "q4_k_m"

// ParseDType parses `swarm model synth --dtype`: a swarm dtype name
// ("f16", "q4_k", ...) or a mix ("q4_k_m"), returning the base dtype and
// the mix.
func ParseDType(name string) (swarm.DType, Mix, error) {
	if Mix(strings.ToLower(strings.TrimSpace(name))) == MixQ4_K_M {
		return swarm.DTypeQ4_K, MixQ4_K_M, nil
	}
	dt, err := swarm.ParseDType(name)
	if err != nil {
		return dt, "", fmt.Errorf("%w, or the mix %s", err, MixQ4_K_M)
	}
	return dt, "", nil
}

// useMoreBits is llama.cpp's use_more_bits(i, n): the blocks whose attn_v
// and ffn_down get more bits in the _M recipes.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// tensorDType is the dtype a matrix is stored in: c.DType, or what the
// mix gives it. (1-D tensors are F32 in GGUF and keep c.DType in the
// formats without quantized types.)
func (c Config) tensorDType(t tensor) swarm.DType {
	if c.Mix != MixQ4_K_M || t.vec {
		return c.DType
	}
	switch {
	case t.kind == kOutput:
		return swarm.DTypeQ6_K
	case t.block >= 0 && (t.kind == kWV || t.kind == kW2) && useMoreBits(t.block, c.Layers):
		return swarm.DTypeQ6_K
	}
	return swarm.DTypeQ4_K
}

// ggmlTypes are the GGML tensor type ids (ggml.h enum ggml_type) of the
// dtypes GGUF files store.
var ggmlTypes = map[swarm.DType]uint32{
	swarm.DTypeF32: 0, swarm.DTypeF16: 1, swarm.DTypeQ4_0: 2, swarm.DTypeQ4_1: 3,
	swarm.DTypeQ5_0: 6, swarm.DTypeQ5_1: 7, swarm.DTypeQ8_0: 8, swarm.DTypeQ2_K: 10,
	swarm.DTypeQ3_K: 11, swarm.DTypeQ4_K: 12, swarm.DTypeQ5_K: 13, swarm.DTypeQ6_K: 14,
	swarm.DTypeIQ4_NL: 20, swarm.DTypeIQ4_XS: 23, swarm.DTypeBF16: 30,
}

// fileType is general.file_type (llama.h enum llama_ftype): single-type
// K-quant files are given the nearest recipe's number (Q3_K as Q3_K_S,
// Q4_K as Q4_K_S, Q5_K as Q5_K_S); llama.cpp only displays it.
func (c Config) fileType() uint32 {
	if c.Mix == MixQ4_K_M {
		return 15
	}
	return map[swarm.DType]uint32{
		swarm.DTypeF32: 0, swarm.DTypeF16: 1, swarm.DTypeQ4_0: 2, swarm.DTypeQ4_1: 3,
		swarm.DTypeQ8_0: 7, swarm.DTypeQ5_0: 8, swarm.DTypeQ5_1: 9, swarm.DTypeQ2_K: 10,
		swarm.DTypeQ3_K: 11, swarm.DTypeQ4_K: 14, swarm.DTypeQ5_K: 16, swarm.DTypeQ6_K: 18,
		swarm.DTypeIQ4_NL: 25, swarm.DTypeIQ4_XS: 30, swarm.DTypeBF16: 32,
	}[c.DType]
}
