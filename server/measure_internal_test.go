package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/swarm"
)

// TestFitPrefill checks the least-squares fit of tauI(l) on points worked
// out by hand.
func TestFitPrefill(t *testing.T) {
	tests := []struct {
		name   string
		xs, ys []float64
		want   swarm.PrefillFit
	}{
		// y = 2 + 3l exactly.
		{"exact line", []float64{1, 8, 32}, []float64{5, 26, 98}, swarm.PrefillFit{Intercept: 2, Slope: 3}},
		// Points (1,3), (2,4), (3,8): slope = sum((x-2)(y-5))/sum((x-2)^2) = (2+0+3)/2 = 2.5,
		// intercept = 5 - 2.5*2 = 0.
		{"noisy line", []float64{1, 2, 3}, []float64{3, 4, 8}, swarm.PrefillFit{Intercept: 0, Slope: 2.5}},
		// Points (1,1), (2,5): the line -3 + 4l has a negative intercept;
		// through the origin the slope is sum(xy)/sum(x^2) = 11/5.
		{"negative intercept", []float64{1, 2}, []float64{1, 5}, swarm.PrefillFit{Slope: 2.2}},
		{"single point", []float64{4}, []float64{2}, swarm.PrefillFit{Slope: 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitPrefill(tt.xs, tt.ys)
			require.InDelta(t, tt.want.Intercept, got.Intercept, 1e-12)
			require.InDelta(t, tt.want.Slope, got.Slope, 1e-12)
		})
	}
}

func TestMedian(t *testing.T) {
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
}

// TestMeasureKeyChanges checks that the cache key changes with the span
// and the model, so that a measurement is never reused for another one.
func TestMeasureKeyChanges(t *testing.T) {
	base := measureKey{Schema: measureSchema, ModelPath: "/m.bin", ModelSize: 10, Model: swarm.ModelInfo{Name: "m", DType: swarm.DTypeF32},
		Span: swarm.Span{Start: 0, End: 2}, CPU: "cpu", GOMAXPROCS: 2}
	dir := t.TempDir()
	file := func(k measureKey) string {
		p, err := k.file(dir)
		require.NoError(t, err)
		return p
	}
	other := base
	other.Span = swarm.Span{Start: 0, End: 3}
	require.NotEqual(t, file(base), file(other))
	other = base
	other.ModelSize = 11
	require.NotEqual(t, file(base), file(other))
	other = base
	other.GOMAXPROCS = 4
	require.NotEqual(t, file(base), file(other))
	require.Equal(t, file(base), file(base))

	want := Timing{Tau: 1e-5, TauI: swarm.PrefillFit{Intercept: 1e-4, Slope: 2e-6}}
	require.NoError(t, storeTiming(dir, base, want))
	got, ok := loadTiming(dir, base)
	require.True(t, ok)
	require.Equal(t, want, got)
	_, ok = loadTiming(dir, other)
	require.False(t, ok)

	bad := base
	bad.Model.DType = swarm.DTypeInvalid
	_, err := bad.file(dir)
	require.Error(t, err, "a key that does not encode has no file")
	require.Error(t, storeTiming(dir, bad, want))
}
