package blocks_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/blocks/synth"
	"github.com/swarmllm/swarm/swarm"
)

// slidingModel is a gemma3 model with an 8-token window, local and global
// blocks alternating (pattern 2: blocks 0 and 2 slide, 1 and 3 attend to
// everything), loaded twice from one GGUF: ring caches (the engine as it
// is) and full-length caches read in place (blocks.UseFullCaches, the
// computation before ring caches, an independent path).
func slidingModel(t *testing.T) (ring, full loaded) {
	t.Helper()
	c := archConfig(synth.ArchGemma3, swarm.DTypeF32)
	c.Layers, c.SlidingWindow, c.SlidingPattern = 4, 8, 2
	path := filepath.Join(t.TempDir(), "model.gguf")
	require.NoError(t, synth.WriteGGUF(path, c))
	ring, full = load(t, path), load(t, path)
	blocks.UseFullCaches(full.engine)
	return ring, full
}

// slidingStep is one Forward call: n tokens at pos.
type slidingStep struct{ pos, n int }

// TestSlidingRingCachesBitIdentical runs sequences of 240 positions (30
// windows, more than three rings of 8 + swarm.SlidingRewind = 72
// positions) through sessions with ring caches and with full caches, in
// the same steps, and requires every output bit for bit equal: one long
// prefill (longer than the ring), a short prefill then single-token
// decode, uneven chunks, and rewinds within the allowance (one position,
// a resent chunk, SlidingRewind+1 positions back, and a restart at 0).
func TestSlidingRingCachesBitIdentical(t *testing.T) {
	ring, full := slidingModel(t)
	info := ring.model.Info()
	const maxLength = 240
	tokens := make([]int, maxLength)
	for i := range tokens {
		tokens[i] = (7*i + 3) % info.Vocab
	}
	decode := []slidingStep{{0, 10}}
	for p := 10; p < maxLength; p++ {
		decode = append(decode, slidingStep{p, 1})
	}
	for _, c := range []struct {
		name  string
		span  swarm.Span
		steps []slidingStep
	}{
		{"one prefill", info.Blocks(), []slidingStep{{0, maxLength}}},
		{"decode", info.Blocks(), decode},
		{"decode on a sub-span starting with a global block", swarm.Span{Start: 1, End: 4}, decode},
		{"uneven chunks", info.Blocks(), []slidingStep{{0, 3}, {3, 80}, {83, 1}, {84, 71}, {155, 72}, {227, 13}}},
		{"rewinds", swarm.Span{Start: 0, End: 3}, []slidingStep{
			{0, 100}, {99, 1}, {100, 20}, {100, 20}, // resend the last step
			{120 - swarm.SlidingRewind - 1, swarm.SlidingRewind + 1}, // the farthest rewind allowed
			{120, 30}, {150, 1}, {150, 1}, {151, 49},
			{0, 50}, {50, 190}, // restart at 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := ring.engine.NewSession(c.span, maxLength)
			require.NoError(t, err)
			defer rs.Close()
			fs, err := full.engine.NewSession(c.span, maxLength)
			require.NoError(t, err)
			defer fs.Close()
			for _, st := range c.steps {
				x, err := ring.head.Embed(tokens[st.pos : st.pos+st.n])
				require.NoError(t, err)
				want, err := fs.Forward(context.Background(), st.pos, x, st.n)
				require.NoError(t, err)
				got, err := rs.Forward(context.Background(), st.pos, x, st.n)
				require.NoError(t, err, "step at %d", st.pos)
				requireBits(t, want, got, "step of %d at %d", st.n, st.pos)
				require.Equal(t, st.pos+st.n, rs.Len())
			}
		})
	}
}

// TestSlidingRingRewindTooFar requires a step further back than the rings
// hold to fail with ErrPosition naming the positions, leaving the session
// as it was: the next step at Len() still matches the full caches.
func TestSlidingRingRewindTooFar(t *testing.T) {
	ring, full := slidingModel(t)
	info := ring.model.Info()
	d := info.DModel
	const maxLength = 200
	tokens := make([]int, maxLength)
	for i := range tokens {
		tokens[i] = (5*i + 1) % info.Vocab
	}
	embed := func(pos, n int) []float32 {
		x, err := ring.head.Embed(tokens[pos : pos+n])
		require.NoError(t, err)
		return x
	}
	rs, err := ring.engine.NewSession(info.Blocks(), maxLength)
	require.NoError(t, err)
	fs, err := full.engine.NewSession(info.Blocks(), maxLength)
	require.NoError(t, err)
	for _, s := range []blocks.Session{rs, fs} {
		_, err := s.Forward(context.Background(), 0, embed(0, 150), 150)
		require.NoError(t, err)
	}
	// The rings hold 150-72 = 78..149; position 84 attends to 77..84.
	back := 150 - swarm.SlidingRewind - 2
	_, err = rs.Forward(context.Background(), back, embed(back, 1), 1)
	require.ErrorIs(t, err, blocks.ErrPosition)
	require.ErrorContains(t, err, "position 84 attends to positions 77..83")
	require.ErrorContains(t, err, "hold only 78..149")
	require.Equal(t, 150, rs.Len(), "the failed step leaves the caches alone")
	_, err = fs.Forward(context.Background(), back, embed(back, 1), 1)
	require.NoError(t, err, "full caches take any rewind")

	// Continue both at 150 (the full session recomputes 84..149 first).
	_, err = fs.Forward(context.Background(), back, embed(back, 150-back), 150-back)
	require.NoError(t, err)
	want, err := fs.Forward(context.Background(), 150, embed(150, 50), 50)
	require.NoError(t, err)
	got, err := rs.Forward(context.Background(), 150, embed(150, 50), 50)
	require.NoError(t, err)
	requireBits(t, want, got)
	require.Len(t, got, 50*d)
}

// TestSlidingCacheBytes requires a session's cache bytes, reported and
// allocatable, to be ModelInfo.SpanCacheBytes: rings of window +
// SlidingRewind positions on sliding blocks once maxLength exceeds that,
// full caches otherwise and on global blocks.
func TestSlidingCacheBytes(t *testing.T) {
	ring, full := slidingModel(t)
	info := ring.model.Info()
	perToken := int64(2 * info.NKVHeads * info.HeadDim * 4) // K and V, float32
	require.Equal(t, perToken, info.CacheBytesPerToken)
	for _, c := range []struct {
		span      swarm.Span
		maxLength int
		want      int64 // by hand: sliding blocks hold min(maxLength, 8+64)
	}{
		{info.Blocks(), 2048, perToken * (72 + 2048 + 72 + 2048)},
		{swarm.Span{Start: 1, End: 3}, 2048, perToken * (2048 + 72)},
		{swarm.Span{Start: 0, End: 1}, 72, perToken * 72},
		{swarm.Span{Start: 0, End: 1}, 73, perToken * 72},
		{info.Blocks(), 50, perToken * 4 * 50},
	} {
		require.Equal(t, c.want, info.SpanCacheBytes(c.span, c.maxLength))
		s, err := ring.engine.NewSession(c.span, c.maxLength)
		require.NoError(t, err)
		require.Equal(t, c.want, s.CacheBytes(), "%s, max length %d", c.span, c.maxLength)
		require.Equal(t, c.want, blocks.CapacityCacheBytes(s), "%s, max length %d", c.span, c.maxLength)
		require.Zero(t, s.HeldBytes(), "no page before the first step")
		require.NoError(t, s.Close())
		f, err := full.engine.NewSession(c.span, c.maxLength)
		require.NoError(t, err)
		require.Equal(t, int64(c.span.Len())*info.CacheBytes(c.maxLength), blocks.CapacityCacheBytes(f))
		require.NoError(t, f.Close())
	}
}

// endsAfter is a context whose Err is nil for its first n calls and
// context.Canceled after: Forward checks it before each block, so it ends
// a step after exactly n blocks.
type endsAfter struct {
	context.Context
	n int
}

func (c *endsAfter) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestSlidingRingCanceledStep ends steps after some blocks and retries
// them: the rings keep what every block still holds, so a retry works
// (bit for bit as with full caches) unless a block already overwrote the
// window the retry needs, which fails with ErrPosition; a restart at 0
// always works.
func TestSlidingRingCanceledStep(t *testing.T) {
	ring, full := slidingModel(t)
	info := ring.model.Info()
	const maxLength = 240
	tokens := make([]int, maxLength)
	for i := range tokens {
		tokens[i] = (11*i + 2) % info.Vocab
	}
	embed := func(pos, n int) []float32 {
		x, err := ring.head.Embed(tokens[pos : pos+n])
		require.NoError(t, err)
		return x
	}
	rs, err := ring.engine.NewSession(info.Blocks(), maxLength)
	require.NoError(t, err)
	fs, err := full.engine.NewSession(info.Blocks(), maxLength)
	require.NoError(t, err)
	step := func(pos, n int) {
		t.Helper()
		want, err := fs.Forward(context.Background(), pos, embed(pos, n), n)
		require.NoError(t, err)
		got, err := rs.Forward(context.Background(), pos, embed(pos, n), n)
		require.NoError(t, err)
		requireBits(t, want, got, "step of %d at %d", n, pos)
	}
	step(0, 150)
	for _, c := range []struct {
		name   string
		blocks int // blocks run before ctx ends
		n      int
		retry  bool
	}{
		{"long step ended before any block", 0, 80, true},
		{"long step ended after two blocks", 2, 80, false}, // block 0 now holds 158..229 only
		{"decode step ended after one block", 1, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := rs.Forward(&endsAfter{context.Background(), c.blocks}, 150, embed(150, c.n), c.n)
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, 150, rs.Len())
			if c.retry {
				step(150, c.n)
				step(0, 150) // back to 150 for the next case
				return
			}
			_, err = rs.Forward(context.Background(), 150, embed(150, c.n), c.n)
			require.ErrorIs(t, err, blocks.ErrPosition)
			require.ErrorContains(t, err, "position 150 attends to positions 143..149")
			require.ErrorContains(t, err, "hold none of them: a step cut short overwrote them")
			step(0, 150)
		})
	}
}
