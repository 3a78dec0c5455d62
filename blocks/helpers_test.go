package blocks_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/internal/testenv"
)

// synthFiles writes the model c in every format and returns the paths by
// format name: "hf", "hf-sharded", "gguf", "llama2c-v0", "llama2c-v1"
// (hf only for f32/f16/bf16; llama2.c only for the llama and mistral
// architectures).
func synthFiles(t *testing.T, c synth.Config) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	require.NoError(t, synth.WriteGGUF(filepath.Join(dir, "model.gguf"), c))
	paths["gguf"] = filepath.Join(dir, "model.gguf")
	if c.Arch == "" || c.Arch == synth.ArchLlama || c.Arch == synth.ArchMistral {
		require.NoError(t, synth.WriteLlama2CTokenizer(filepath.Join(dir, "tokenizer.bin"), c))
		for v := range 2 {
			p := filepath.Join(dir, "model-v"+strconv.Itoa(v)+".bin")
			require.NoError(t, synth.WriteLlama2C(p, c, v))
			paths["llama2c-v"+strconv.Itoa(v)] = p
		}
	}
	if !c.DType.Quantized() {
		require.NoError(t, synth.WriteHF(filepath.Join(dir, "hf"), c))
		paths["hf"] = filepath.Join(dir, "hf")
		if c.Layers >= 2 {
			require.NoError(t, synth.WriteHFShards(filepath.Join(dir, "hf-sharded"), c, 2))
			paths["hf-sharded"] = filepath.Join(dir, "hf-sharded")
		}
	}
	return paths
}

// loaded is a whole model in memory.
type loaded struct {
	model  *blocks.Model
	engine blocks.Engine
	head   blocks.Head
}

func load(t *testing.T, path string, opts ...blocks.Option) loaded {
	t.Helper()
	m, err := blocks.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	e, err := m.LoadSpan(m.Info().Blocks())
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	h, err := m.LoadHead()
	require.NoError(t, err)
	return loaded{model: m, engine: e, head: h}
}

// logitsOf runs tokens through a fresh session as one prefill and returns
// the logits [Vocab] at every position.
func logitsOf(t *testing.T, l loaded, tokens []int) [][]float32 {
	t.Helper()
	s, err := l.engine.NewSession(l.engine.Span(), len(tokens))
	require.NoError(t, err)
	defer s.Close()
	x, err := l.head.Embed(tokens)
	require.NoError(t, err)
	y, err := s.Forward(context.Background(), 0, x, len(tokens))
	require.NoError(t, err)
	d := l.head.Info().DModel
	out := make([][]float32, len(tokens))
	for i := range tokens {
		out[i], err = l.head.Logits(y[i*d : (i+1)*d])
		require.NoError(t, err)
	}
	return out
}

// countingFile counts the bytes read through ReadAt.
type countingFile struct {
	*os.File
	mu     *sync.Mutex
	counts map[string]int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.mu.Lock()
	f.counts[f.Name()] += int64(n)
	f.mu.Unlock()
	return n, err
}

// byteCounter hands out countingFiles and sums what they read.
type byteCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (c *byteCounter) open(path string) (blocks.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, mu: &c.mu, counts: c.counts}, nil
}

// snapshot copies the bytes read so far, by file.
func (c *byteCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func (c *byteCounter) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.counts {
		n += v
	}
	return n
}

// reference is stories260K's REFERENCE.md.
type reference struct {
	text   string    // section 2: the 200-token greedy text
	ids    []int     // section 3: the 256 greedy ids
	logits []float32 // section 3: the first five logits at pos 0
}

func stories260KReference(t *testing.T) reference {
	t.Helper()
	raw, err := os.ReadFile(testenv.SharedFile(t, "models", "stories260K", "REFERENCE.md"))
	require.NoError(t, err)
	doc := string(raw)
	var r reference
	textRe := regexp.MustCompile("(?s)i\\.e\\. this text \\(200 generated tokens.*?```\n(.*?)\n```")
	m := textRe.FindStringSubmatch(doc)
	require.Len(t, m, 2, "section 2 text not found in REFERENCE.md")
	r.text = m[1]
	idsRe := regexp.MustCompile(`(?s)The 256 greedy token ids[^\n]*\n\s*([0-9 ]+)\n`)
	m = idsRe.FindStringSubmatch(doc)
	require.Len(t, m, 2, "section 3 ids not found in REFERENCE.md")
	for _, f := range strings.Fields(m[1]) {
		id, err := strconv.Atoi(f)
		require.NoError(t, err)
		r.ids = append(r.ids, id)
	}
	require.Len(t, r.ids, 256)
	logRe := regexp.MustCompile(`first five entries:\s*\n\s*\[([^\]]*)\]`)
	m = logRe.FindStringSubmatch(doc)
	require.Len(t, m, 2, "section 3 logits not found in REFERENCE.md")
	for _, f := range strings.Split(m[1], ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
		require.NoError(t, err)
		r.logits = append(r.logits, float32(v))
	}
	require.Len(t, r.logits, 5)
	return r
}
