package blocks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// Example shows the life of a model: a server loads a span, a client loads
// the head, and generation runs through a session.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	cfg := synth.DefaultConfig() // 2 blocks, d_model 64, f32, vocab 320
	cfg.Name = "tiny"
	if err := synth.WriteHF(filepath.Join(dir, "tiny"), cfg); err != nil {
		fmt.Println(err)
		return
	}

	m, err := blocks.Open(filepath.Join(dir, "tiny"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	info := m.Info()
	fmt.Printf("%s: %d blocks, s_m = %d bytes, %d cache bytes per token per block\n",
		info.Name, info.NBlocks, info.BlockBytes, info.CacheBytesPerToken)

	// A server hosting block 1 only reads that block's weights.
	engine, err := m.LoadSpan(swarm.Span{Start: 1, End: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer engine.Close()
	fmt.Println("engine weights:", engine.WeightBytes(), "bytes")

	// A local generation runs all blocks in one session.
	whole, err := m.LoadSpan(info.Blocks())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer whole.Close()
	head, err := m.LoadHead()
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, _ := head.Tokenizer().Encode("hello", true)
	session, _ := whole.NewSession(whole.Span(), len(prompt)+8)
	defer session.Close()
	fmt.Println("session caches:", session.CacheBytes(), "bytes")
	sampler, _ := blocks.NewSampler(blocks.SamplerConfig{Temperature: 0.8, TopP: 0.9, Seed: 1})
	ids, err := blocks.Generate(context.Background(), head, session, prompt, 8, sampler, func(prev, next int) error {
		return nil // print head.Tokenizer().Decode(prev, next) to stream text
	})
	fmt.Println(len(ids) <= 8, err)
	// Output:
	// tiny: 2 blocks, s_m = 147968 bytes, 256 cache bytes per token per block
	// engine weights: 147968 bytes
	// session caches: 7680 bytes
	// true <nil>
}
