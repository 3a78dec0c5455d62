package parity

import (
	"fmt"
	"path/filepath"

	"github.com/swarmllm/swarm/blocks/synth"
)

// SynthDTypes are the weight dtypes SynthModel writes, by their `swarm
// model synth --dtype` names: every GGUF dtype synth supports, the mix
// q4_k_m last.
var SynthDTypes = []string{
	"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
	"q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs", "q4_k_m",
}

// SynthConfig is the tiny model Compare runs on for an architecture
// (synth.Archs) and a weight dtype (SynthDTypes): 2 blocks, 4 query heads
// sharing 2 KV heads (GQA), d_model 128 with head size 32 and FFN 256, or
// d_model 256 with head size 64 and FFN 512 for the dtypes whose blocks
// hold 256 values (K-quants, iq4_xs, q4_k_m), vocab 320. gemma3 gets
// synth's 4-token sliding window on block 0, shorter than Compare's
// default run of 12 positions. The error wraps synth.ErrConfig for an
// unknown architecture or dtype.
func SynthConfig(arch, dtype string, seed uint64) (synth.Config, error) {
	a, err := synth.ParseArch(arch)
	if err != nil {
		return synth.Config{}, err
	}
	dt, mix, err := synth.ParseDType(dtype)
	if err != nil {
		return synth.Config{}, fmt.Errorf("%w: %w", synth.ErrConfig, err)
	}
	c := synth.Config{Arch: a, Name: a + "-" + dtype, Layers: 2, Dim: 128, FFN: 256, Heads: 4, KVHeads: 2,
		Vocab: 320, DType: dt, Mix: mix, MaxSeqLen: 256, Seed: seed}
	if dt.BlockSize() >= 256 || mix != "" {
		c.Dim, c.FFN = 256, 512
	}
	return c, c.Validate()
}

// SynthModel writes SynthConfig(arch, dtype, seed) as a GGUF file
// (tokenizer embedded) into dir, created if missing, and returns its path,
// dir/ARCH-DTYPE.gguf.
func SynthModel(dir, arch, dtype string, seed uint64) (string, error) {
	c, err := SynthConfig(arch, dtype, seed)
	if err != nil {
		return "", err
	}
	paths, err := synth.WriteFormats(dir, c, []synth.Format{synth.FormatGGUF})
	if err != nil {
		return "", fmt.Errorf("parity: synthesizing %s %s: %w", arch, dtype, err)
	}
	return filepath.Clean(paths[0]), nil
}
