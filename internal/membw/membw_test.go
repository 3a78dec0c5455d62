package membw_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/internal/membw"
)

// plainSum is the reference: a byte-at-a-time loop building each
// little-endian word, the last partial word zero-padded.
func plainSum(b []byte) uint64 {
	var s uint64
	for i := 0; i < len(b); i += 8 {
		var w uint64
		for j := 0; j < 8 && i+j < len(b); j++ {
			w |= uint64(b[i+j]) << (8 * j)
		}
		s += w
	}
	return s
}

// TestChecksumMatchesPlainLoop checks every kernel available here against
// plainSum on sizes around the kernels' strides (32, 64, 128, 256 bytes)
// and at odd offsets, so every byte must have been loaded.
func TestChecksumMatchesPlainLoop(t *testing.T) {
	buf := make([]byte, 5000)
	for i := range buf {
		buf[i] = byte(i*131 + 17)
	}
	// By hand: the words 0x0807060504030201 and 0x09 (one byte, padded).
	hand := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	require.Equal(t, uint64(0x0807060504030201+9), plainSum(hand))
	sizes := []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 129, 255, 256, 257, 511, 1000, 4093}
	for _, k := range membw.Available() {
		got, err := membw.Checksum(k, hand)
		require.NoError(t, err)
		require.Equal(t, plainSum(hand), got, k)
		for _, n := range sizes {
			for _, off := range []int{0, 1, 3} {
				b := buf[off : off+n]
				got, err := membw.Checksum(k, b)
				require.NoError(t, err)
				require.Equal(t, plainSum(b), got, "kernel %s, %d bytes at offset %d", k, n, off)
			}
		}
	}
}

// TestChecksumWraps checks the sum is modulo 2^64: 4096 words of all ones
// sum to -4096.
func TestChecksumWraps(t *testing.T) {
	b := make([]byte, 8*4096)
	for i := range b {
		b[i] = 0xff
	}
	for _, k := range membw.Available() {
		got, err := membw.Checksum(k, b)
		require.NoError(t, err)
		require.Equal(t, uint64(1<<64-1)-4095, got, k)
		require.Equal(t, binary.LittleEndian.Uint64(b)*4096, got, k)
	}
}

func TestAvailableEndsWithGo(t *testing.T) {
	av := membw.Available()
	require.Equal(t, membw.KernelGo, av[len(av)-1])
	require.Equal(t, av[0], membw.Best())
	_, err := membw.Checksum("sse9", nil)
	require.Error(t, err)
}

func TestConfigValidate(t *testing.T) {
	good := membw.DefaultConfig()
	require.NoError(t, good.Validate())
	for name, edit := range map[string]func(*membw.Config){
		"size":    func(c *membw.Config) { c.Size = 1000 },
		"threads": func(c *membw.Config) { c.Threads = []int{1, 0} },
		"none":    func(c *membw.Config) { c.Threads = nil },
		"passes":  func(c *membw.Config) { c.Passes = 0 },
		"kernel":  func(c *membw.Config) { c.Kernel = "sse9" },
	} {
		c := good
		edit(&c)
		require.ErrorIs(t, c.Validate(), membw.ErrConfig, name)
	}
}

// TestMeasureShape runs a tiny measurement (not a timing assertion: only
// that every count got a positive figure from the chosen kernel).
func TestMeasureShape(t *testing.T) {
	cfg := membw.Config{Size: 4 << 20, Threads: []int{1, 2}, Passes: 2}
	rep, err := membw.Measure(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, membw.Best(), rep.Kernel)
	require.Len(t, rep.Results, 2)
	for i, r := range rep.Results {
		require.Equal(t, cfg.Threads[i], r.Threads)
		require.Positive(t, r.GBs)
	}
	require.Positive(t, rep.Best())
}
