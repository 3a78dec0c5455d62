package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
)

// TestCacheDTypeF16AdmitsTwice serves stories260K with --cache-dtype f32
// and f16 in the same --memory: the f16 server advertises cache_dtype f16
// and half the cache bytes per token (2 * NKVHeads * HeadDim * 2), and
// memory model (2) admits twice the sessions: the budget holds exactly 10
// f32 sessions of 256 tokens, so 20 f16 ones.
func TestCacheDTypeF16AdmitsTwice(t *testing.T) {
	info := modelInfo(t)
	span := info.Blocks()
	const maxLength, f32Sessions = 256, 10
	kv := int64(info.NKVHeads * info.HeadDim)
	f32Session := int64(info.NBlocks) * maxLength * 2 * kv * 4 // no sliding blocks
	memory := int64(info.NBlocks)*info.BlockBytes + f32Sessions*f32Session

	for _, tc := range []struct {
		dtype        swarm.DType
		wantPerToken int64
		wantSessions int
	}{
		{swarm.DTypeF32, 2 * kv * 4, f32Sessions},
		{swarm.DTypeF16, 2 * kv * 2, 2 * f32Sessions},
	} {
		t.Run(tc.dtype.String(), func(t *testing.T) {
			srv := newServer(t, span, func(c *server.Config) {
				c.CacheDType, c.MemoryBytes = tc.dtype, memory
			})
			t.Cleanup(func() { srv.Close() })
			in := srv.Info()
			require.Equal(t, tc.dtype, in.CacheDType)
			require.Equal(t, tc.wantPerToken, in.CacheBytesPerToken)
			require.Equal(t, f32Sessions*f32Session, in.CacheBytesCapacity)

			adm, err := admission.New(admission.Config{Model: srv.ModelInfo(), Span: span, WeightBytes: int64(info.NBlocks) * info.BlockBytes, MemoryBytes: memory})
			require.NoError(t, err)
			n := 0
			for {
				_, err := adm.Acquire(context.Background(), admission.Request{Span: span, MaxLength: maxLength})
				if err != nil {
					require.ErrorIs(t, err, admission.ErrTimeout)
					break
				}
				n++
			}
			require.Equal(t, tc.wantSessions, n)
		})
	}
}

// TestCacheDTypeRefused: a cache dtype the backend cannot keep is a
// configuration error.
func TestCacheDTypeRefused(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Model, cfg.Blocks, cfg.CacheDType = "m.gguf", swarm.Span{Start: 0, End: 1}, swarm.DTypeQ8_0
	err := cfg.Validate()
	require.ErrorIs(t, err, server.ErrBadConfig)
	require.ErrorContains(t, err, "--cache-dtype")
	cfg.CacheDType = swarm.DTypeF16
	require.NoError(t, cfg.Validate())
}
