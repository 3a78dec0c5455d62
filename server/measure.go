package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/klauspost/cpuid/v2"
	"gonum.org/v1/gonum/stat"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// measureSchema versions the cache file layout and the measuring method;
// bump it when either changes so old entries are ignored.
const measureSchema = 4

// Measuring parameters: decodeSteps single-token steps at positions spread
// evenly over the first decodeWindow positions (their median divided by the
// span length is tau), and for each prefill length the median of
// prefillReps prefills (divided by the span length, then fit linearly).
const (
	decodeSteps  = 9
	decodeWindow = 256
	prefillReps  = 3
)

// prefillLengths are the input lengths timed for the fit tauI(l), capped at
// the model's context.
var prefillLengths = []int{1, 8, 32, 128}

// timing is the result of a measurement: tau_j and tauI_j(l) of paper 003
// Sec. 2.2, with how they were obtained.
type Timing struct {
	// Tau is the decode time per block per token, seconds.
	Tau float64 `json:"tau"`
	// TauI is the prefill time per block, fit linearly in the input length.
	TauI swarm.PrefillFit `json:"tau_i"`
	// TauBatch is the decode time per block of a batch of single-token
	// steps of b sessions, for b in batchSizes.
	TauBatch []swarm.BatchTau `json:"tau_batch"`
	// Detail is what /v1/info shows under "measurement".
	Detail api.Measurement `json:"detail"`
}

// measureKey identifies what a measurement holds for: the model file, the
// span and the hardware (CPU model, GOMAXPROCS) and the build of the
// engine. Any change gives another cache entry.
type measureKey struct {
	Schema     int             `json:"schema"`
	ModelPath  string          `json:"model_path"`
	ModelSize  int64           `json:"model_size"`
	ModelMtime int64           `json:"model_mtime_ns"`
	Model      swarm.ModelInfo `json:"model"`
	Span       swarm.Span      `json:"span"`
	CPU        string          `json:"cpu"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	GOARCH     string          `json:"goarch"`
	Build      string          `json:"build"`
}

// hardware names the CPU and the parallelism a measurement holds for.
func hardware() string {
	brand := cpuid.CPU.BrandName
	if brand == "" {
		brand = runtime.GOARCH
	}
	return fmt.Sprintf("%s, GOMAXPROCS=%d", brand, runtime.GOMAXPROCS(0))
}

// buildID names the build of this binary (its VCS revision or module
// version), so that a new engine is measured anew.
func buildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	id := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			id += " " + s.Key + "=" + s.Value
		}
	}
	return id
}

// newMeasureKey builds the cache key of a model path, its description and a span.
func newMeasureKey(path string, info swarm.ModelInfo, span swarm.Span) (measureKey, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return measureKey{}, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return measureKey{}, err
	}
	return measureKey{
		Schema: measureSchema, ModelPath: abs, ModelSize: st.Size(), ModelMtime: st.ModTime().UnixNano(),
		Model: info, Span: span, CPU: cpuid.CPU.BrandName, GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOARCH: runtime.GOARCH, Build: buildID(),
	}, nil
}

// file returns the cache file of the key under dir: a hash of the key's
// JSON. It fails only for a key that does not encode (an invalid dtype).
func (k measureKey) file(dir string) (string, error) {
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("server: measurement cache key: %w", err)
	}
	sum := sha256.Sum256(b)
	return filepath.Join(dir, "measure-"+hex.EncodeToString(sum[:8])+".json"), nil
}

// cacheEntry is the content of a cache file.
type cacheEntry struct {
	Key    measureKey `json:"key"`
	Timing Timing     `json:"timing"`
}

// loadTiming reads a cached measurement; ok is false when there is none
// for exactly this key.
func loadTiming(dir string, key measureKey) (Timing, bool) {
	path, err := key.file(dir)
	if err != nil {
		return Timing{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Timing{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return Timing{}, false
	}
	want, err1 := json.Marshal(key)
	got, err2 := json.Marshal(e.Key)
	if err1 != nil || err2 != nil || string(want) != string(got) || !(e.Timing.Tau > 0) {
		return Timing{}, false
	}
	return e.Timing, true
}

// storeTiming writes a measurement to the cache atomically (temporary file,
// then rename).
func storeTiming(dir string, key measureKey, t Timing) error {
	path, err := key.file(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cacheEntry{Key: key, Timing: t}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".measure-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// defaultMeasureDir is os.UserCacheDir()/swarm/measure.
func defaultMeasureDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "swarm", "measure"), nil
}

// measure times the engine's whole span: tau is the median of decodeSteps
// single-token decode steps divided by the span length, taken at positions
// spread evenly over the first decodeWindow positions (a CPU engine's decode
// step costs more at later positions, through attention over the cache, so
// steps at the start alone would underestimate a session's average); tauI(l) is the
// least-squares line through the median prefill time per block of inputs of
// each length in prefillLengths (gonum stat.LinearRegression), refit through
// the origin if the intercept comes out negative. Inputs are fixed
// pseudo-activations of unit scale: the engine's time does not depend on
// the values.
func measure(ctx context.Context, e blocks.Engine) (Timing, error) {
	info := e.Info()
	span := e.Span()
	maxLen := info.MaxSeqLen
	if maxLen <= 0 {
		maxLen = 2048
	}
	lengths := make([]int, 0, len(prefillLengths))
	for _, l := range prefillLengths {
		if l <= maxLen {
			lengths = append(lengths, l)
		}
	}
	window := min(decodeWindow, maxLen)
	longest := max(slices.Max(lengths), window)
	sess, err := e.NewSession(span, longest)
	if err != nil {
		return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
	}
	defer sess.Close()
	d := info.DModel
	input := make([]float32, longest*d)
	for i := range input {
		input[i] = float32(math.Sin(float64(i) * 0.7))
	}
	forward := func(pos, n int) (float64, error) {
		start := time.Now()
		_, err := sess.Forward(ctx, pos, input[:n*d], n)
		return time.Since(start).Seconds(), err
	}

	// Decode: warm up with a prefill of window-1 positions, then step
	// single tokens at increasing positions, each after an untimed prefill
	// from the previous step up to its position (the first from 0), so
	// every step sees a cache of exactly that many earlier positions and no
	// step goes back: sliding-window blocks keep only their window plus
	// swarm.SlidingRewind positions.
	history := window - 1
	if history > 0 {
		if _, err := forward(0, history); err != nil {
			return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
		}
	}
	var positions []int
	for i := 1; i <= decodeSteps; i++ {
		if p := i * history / decodeSteps; len(positions) == 0 || p != positions[len(positions)-1] {
			positions = append(positions, p)
		}
	}
	dec := make([]float64, 0, len(positions))
	next := 0 // the first position not yet computed since the warm-up
	for _, p := range positions {
		if p > next {
			if _, err := forward(next, p-next); err != nil {
				return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
			}
		}
		s, err := forward(p, 1)
		if err != nil {
			return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
		}
		dec = append(dec, s)
		next = p + 1
	}
	m := float64(span.Len())
	tau := median(dec) / m

	// Prefill: each length from position 0 (Forward truncates the cache).
	xs := make([]float64, len(lengths))
	ys := make([]float64, len(lengths))
	for i, l := range lengths {
		reps := make([]float64, prefillReps)
		for r := range reps {
			if reps[r], err = forward(0, l); err != nil {
				return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
			}
		}
		xs[i], ys[i] = float64(l), median(reps)/m
	}
	fit := fitPrefill(xs, ys)
	if !(tau > 0) {
		tau = math.SmallestNonzeroFloat64 // a clock too coarse for the span
	}
	byBatch, err := measureBatches(ctx, batchEngine(e), input[:d])
	if err != nil {
		return Timing{}, fmt.Errorf("%w: %w", ErrMeasure, err)
	}
	return Timing{Tau: tau, TauI: fit, TauBatch: byBatch, Detail: api.Measurement{
		DecodeSteps: len(dec), DecodePositions: positions, PrefillLengths: lengths, PrefillSeconds: ys,
		Hardware: hardware(), MeasuredAt: time.Now().UTC().Format(time.RFC3339),
	}}, nil
}

// fitPrefill fits tauI(l) = Intercept + Slope*l by least squares; a single
// point or a negative intercept gives the fit through the origin.
func fitPrefill(xs, ys []float64) swarm.PrefillFit {
	if len(xs) >= 2 {
		alpha, beta := stat.LinearRegression(xs, ys, nil, false)
		if alpha >= 0 && beta >= 0 && !math.IsNaN(alpha+beta) {
			return swarm.PrefillFit{Intercept: alpha, Slope: beta}
		}
	}
	_, beta := stat.LinearRegression(xs, ys, nil, true)
	return swarm.PrefillFit{Slope: max(beta, 0)}
}

// median returns the median of xs (the mean of the middle two for an even
// count); xs is reordered.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// loadOrMeasure returns the cached timing for key or measures the engine
// and caches the result. Cache trouble is reported through warn and never
// fails the start.
func loadOrMeasure(ctx context.Context, e blocks.Engine, dir string, key measureKey, remeasure bool, warn func(msg string, err error)) (Timing, error) {
	if dir != "" && !remeasure {
		if t, ok := loadTiming(dir, key); ok {
			t.Detail.Cached = true
			return t, nil
		}
	}
	t, err := measure(ctx, e)
	if err != nil {
		return Timing{}, err
	}
	if dir != "" {
		if err := storeTiming(dir, key, t); err != nil {
			warn("cannot cache the measurement", err)
		}
	}
	return t, nil
}
