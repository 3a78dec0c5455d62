package blocks

import (
	"fmt"
	"math"

	"github.com/swarmllm/swarm/swarm"
)

// rope holds the rotary position embedding (RoPE) frequencies of a model
// (Su et al. 2021, RoFormer, eq. 34). The engine rotates ADJACENT pairs
// (x[2i], x[2i+1]) of each head, the layout of llama2.c and of GGUF's
// "normal" RoPE; Hugging Face's rotate-half weights are permuted into this
// layout when they are loaded (see hfPermutation).
type rope struct {
	headDim int
	// invFreq is [headDim/2]: theta^(-2i/headDim) for pair i, after scaling.
	invFreq []float32
}

// newRope computes the frequencies for info's head size, theta and scaling.
// factors, if not nil, holds GGUF's rope_freqs divisors [headDim/2] (Llama 3
// files store their frequency scaling that way).
func newRope(info swarm.ModelInfo, factors []float32) (*rope, error) {
	hd := info.HeadDim
	r := &rope{headDim: hd, invFreq: make([]float32, hd/2)}
	if factors != nil && len(factors) != hd/2 {
		return nil, fmt.Errorf("%w: rope_freqs has %d values, want head_dim/2 = %d", ErrFormat, len(factors), hd/2)
	}
	theta := float32(info.RopeTheta)
	for i := range hd / 2 {
		// As llama2.c's run.c computes it, in float32:
		// freq = 1.0f / powf(theta, head_dim / (float)head_size).
		e := float32(2*i) / float32(hd)
		f := 1 / float32(math.Pow(float64(theta), float64(e)))
		if s := info.RopeScaling; s != nil {
			f = scaleFreq(f, s)
		}
		if factors != nil {
			f /= factors[i]
		}
		r.invFreq[i] = f
	}
	return r, nil
}

// scaleFreq applies a RoPE scaling scheme to one inverse frequency: "linear"
// divides it by the factor; "llama3" (Hugging Face
// _compute_llama3_parameters) divides the low frequencies by the factor,
// keeps the high ones and interpolates smoothly in between.
func scaleFreq(f float32, s *swarm.RopeScaling) float32 {
	switch s.Type {
	case "linear":
		return f / float32(s.Factor)
	case "llama3":
		old := float64(s.OriginalMaxPositions)
		lowWavelen := old / s.LowFreqFactor
		highWavelen := old / s.HighFreqFactor
		wavelen := 2 * math.Pi / float64(f)
		switch {
		case wavelen < highWavelen:
			return f
		case wavelen > lowWavelen:
			return f / float32(s.Factor)
		default:
			smooth := (old/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			return float32((1-smooth)*float64(f)/s.Factor + smooth*float64(f))
		}
	}
	return f
}

// validRopeScaling reports whether the engine implements s.
func validRopeScaling(s *swarm.RopeScaling) error {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "linear":
		if s.Factor > 0 {
			return nil
		}
	case "llama3":
		if s.Factor > 0 && s.LowFreqFactor > 0 && s.HighFreqFactor > s.LowFreqFactor && s.OriginalMaxPositions > 0 {
			return nil
		}
	default:
		return fmt.Errorf("%w: rope scaling %q is not supported (want linear or llama3)", ErrFormat, s.Type)
	}
	return fmt.Errorf("%w: rope scaling %q has bad parameters %+v", ErrFormat, s.Type, *s)
}

// table writes cos and sin [headDim/2] of the rotation angles at position pos.
func (r *rope) table(pos int, cos, sin []float32) {
	for i, f := range r.invFreq {
		val := float32(pos) * f
		cos[i] = float32(math.Cos(float64(val)))
		sin[i] = float32(math.Sin(float64(val)))
	}
}

// apply rotates the adjacent pairs of every head of x [nHeads*headDim] by the
// angles in cos and sin [headDim/2].
func (r *rope) apply(x []float32, nHeads int, cos, sin []float32) {
	hd := r.headDim
	for h := range nHeads {
		v := x[h*hd : (h+1)*hd]
		for i := range hd / 2 {
			c, s := cos[i], sin[i]
			v0, v1 := v[2*i], v[2*i+1]
			v[2*i] = v0*c - v1*s
			v[2*i+1] = v0*s + v1*c
		}
	}
}

// hfPermutation returns the row order that turns a Hugging Face q_proj or
// k_proj weight [nHeads*headDim, dModel] (rotate-half RoPE: pairs (i,
// i+headDim/2)) into the adjacent-pair layout (pairs (2i, 2i+1)): new row
// h*headDim + 2i + j is old row h*headDim + j*headDim/2 + i. It is the
// permutation llama.cpp's convert_hf_to_gguf.py applies (LlamaModel.permute).
func hfPermutation(nHeads, headDim int) []int {
	perm := make([]int, nHeads*headDim)
	half := headDim / 2
	for h := range nHeads {
		for i := range half {
			for j := range 2 {
				perm[h*headDim+2*i+j] = h*headDim + j*half + i
			}
		}
	}
	return perm
}
