package parity

import (
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// Relative error bounds of Compare: the largest max|cand - ref| / max|ref|
// of any step that passes. The outputs are hidden states of the residual
// stream fed standard-normal inputs, so max|ref| is a few units and a
// relative error is in units of the stream's largest value.
const (
	// BoundF32 is for two sides that round the same way: float32 caches
	// and float32 arithmetic on the same weight values. Only the order of
	// summation may differ (a GPU's tree reduction against the CPU's
	// lanes): float32 carries 2^-24 ≈ 6e-8 per rounding, and a dot product
	// of n terms in another order moves by about sqrt(n) roundings of its
	// largest partial sums, ~1e-6 for the d_model and FFN sizes of real
	// models; 1e-5 leaves a margin for the blocks compounding that while
	// still catching any real bug (a wrong RoPE pair or a missed bias
	// moves outputs by 1e-2 or more).
	BoundF32 = 1e-5
	// BoundF16 is for a side that rounds to binary16 where the other
	// keeps float32: f16 attention caches (K and V rounded when written)
	// or f16 compute (a GPU backend's GEMMs take fp16 inputs and
	// accumulate in float32). binary16 keeps 11 significant bits, 2^-11 ≈
	// 4.9e-4 relative per value; attention's softmax and the blocks
	// after it spread that to a few 1e-4 of the stream (measured: 2e-4 to
	// 4e-4 for f16 caches on f32, f16 and bf16 weights of every
	// architecture SynthConfig makes), and 2e-2 leaves room for larger
	// models and fp16 GEMMs while staying far below what a real bug does
	// (a wrong RoPE pair or a missed bias moves outputs by 1e-1 or more).
	BoundF16 = 2e-2
	// BoundQuant is for quantized weights whenever the two sides do not
	// round identically. The CPU multiplies quantized weights with
	// activations quantized to 8 bits per block of 32 or 256 values
	// (llama.cpp's q8_0/q8_K inputs), so any difference in a product's
	// inputs, however small, moves some activations across an 8-bit
	// rounding step: a step of 1/127 of the block's largest value, ~60x
	// binary16's. Measured on the tiny synthesized models (SynthConfig):
	// f16 caches against f32 caches on the CPU give 0.9e-2 to 2.4e-2 for
	// the weight dtypes whose products use 8-bit activations (q8_0, q4_k,
	// q6_k, q4_k_m) and 2e-4 to 5e-4 for the others; a candidate that does
	// not quantize its activations (a GPU dequantizing weights into fp16
	// GEMMs) differs by that 8-bit rounding itself, about 1e-2 (an f32
	// model against its q8_0 twin, weights and activations both rounded,
	// differs by 1.4e-2 to 2.2e-2). 5e-2 covers these with a margin of
	// 2x or more; a real bug still moves outputs by 1e-1 or more (q4_k
	// against q6_k weights of the same model: 1.6e-1 to 2.4e-1).
	BoundQuant = 5e-2
)

// ComputeDTyper is implemented by a backend whose engines compute with
// inputs narrower than float32, such as a GPU backend running its GEMMs
// in fp16 with float32 accumulation: ComputeDType is that dtype
// (swarm.DTypeF16). A backend without the method is taken to compute in
// float32, as the CPU backend does (weights widened to float32 or, when
// quantized, multiplied with 8-bit activations; BoundQuant covers those).
type ComputeDTyper interface {
	ComputeDType() swarm.DType
}

// ComputeDType is what b's engines compute in: its ComputeDType() when it
// is a ComputeDTyper, else swarm.DTypeF32.
func ComputeDType(b blocks.Backend) swarm.DType {
	if c, ok := b.(ComputeDTyper); ok {
		return c.ComputeDType()
	}
	return swarm.DTypeF32
}

// DefaultBound is the relative error bound of Compare for weights of
// dtype weights computed by ref and cand, the loosest that applies:
//
//   - BoundF32 when both are the same backend with the same cache and
//     compute dtypes (the same kernels: exact agreement is expected, the
//     tightest bound applies), or when both keep float32 caches and
//     compute in float32 on weights that are not quantized (f32, f16 and
//     bf16 weights widen to float32 exactly);
//   - BoundF16 when either side keeps f16 caches or computes in f16;
//   - BoundQuant when the weights are quantized and the two sides differ
//     in backend, cache or compute dtype.
func DefaultBound(weights swarm.DType, ref, cand blocks.Backend) float64 {
	rc, cc := ref.CacheDType(), cand.CacheDType()
	rp, cp := ComputeDType(ref), ComputeDType(cand)
	if ref.Name() == cand.Name() && rc == cc && rp == cp {
		return BoundF32
	}
	bound := BoundF32
	if f32 := swarm.DTypeF32; rc != f32 || cc != f32 || rp != f32 || cp != f32 {
		bound = BoundF16
	}
	if weights.Quantized() {
		bound = BoundQuant
	}
	return bound
}
