package flops

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelsAgree runs every available loop for the same iterations and
// checks each returns the value the chains must reach: x <- x*m + c from
// x = 0 converges towards c/(1-m) and stays finite, the same in every
// kernel up to float32 rounding (the scalar loop rounds twice per step).
func TestKernelsAgree(t *testing.T) {
	const iters = 1000
	for _, k := range Available() {
		v := kernels[k].run(iters)
		require.False(t, v != v, "%s: NaN", k)
		require.Greater(t, v, float32(0), "%s: the chains did not advance", k)
	}
}

func TestMeasure(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Threads, cfg.Passes, cfg.Iters = []int{1, 2}, 1, 1000
	rep, err := Measure(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	require.Greater(t, rep.Peak(), 0.0)
	require.Equal(t, Best(), rep.Kernel)

	for _, bad := range []Config{
		{Threads: nil, Passes: 1, Iters: 1},
		{Threads: []int{0}, Passes: 1, Iters: 1},
		{Threads: []int{1}, Passes: 0, Iters: 1},
		{Threads: []int{1}, Passes: 1, Iters: 1, Kernel: "sse9"},
	} {
		_, err := Measure(context.Background(), bad)
		require.ErrorIs(t, err, ErrConfig, "%+v", bad)
	}
}
