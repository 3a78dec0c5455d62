package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// Probe is the measurement of a span made without serving it (MeasureSpan).
type Probe struct {
	// Model describes the model the span belongs to.
	Model swarm.ModelInfo
	// Tau is the decode time per block per token tau_j, in seconds.
	Tau float64
	// TauI is the prefill time per block, fit linearly in the input length.
	TauI swarm.PrefillFit
	// Measurement says how they were obtained (cached or measured now).
	Measurement api.Measurement
}

// MeasureSpan loads the span cfg.Blocks of cfg.Model, measures tau and tauI
// exactly as New does (or reads them from the measurement cache, keyed by
// model file, span and hardware), releases the weights and returns the
// result. `swarm serve --blocks auto` measures a one-block probe span this
// way before placement has chosen its span: tau and tauI are per block, so
// the probe's values stand for any span of the model on this machine until
// New measures the chosen one. Only cfg.Model, Tokenizer, Blocks, Remeasure
// and MeasureCacheDir are used. logger may be nil.
//
// Errors wrap ErrBadConfig (bad flags, a span outside the model),
// ErrMeasure, ctx.Err(), or the model loader's errors.
func MeasureSpan(ctx context.Context, cfg Config, logger *slog.Logger) (Probe, error) {
	if err := cfg.Validate(); err != nil {
		return Probe{}, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := blocks.Open(cfg.Model, cfg.ModelOptions()...)
	if err != nil {
		return Probe{}, fmt.Errorf("server: %w", err)
	}
	defer m.Close()
	if err := cfg.Blocks.Validate(m.Info().NBlocks); err != nil {
		return Probe{}, fmt.Errorf("%w: probe span: %w", ErrBadConfig, err)
	}
	engine, err := cfg.loadEngine(m, logger)
	if err != nil {
		return Probe{}, err
	}
	defer engine.Close()
	if err := ctx.Err(); err != nil {
		return Probe{}, fmt.Errorf("server: %w", err)
	}
	t, err := measureCached(ctx, cfg, engine, logger)
	if err != nil {
		return Probe{}, err
	}
	return Probe{Model: engine.Info(), Tau: t.Tau, TauI: t.TauI, Measurement: t.Detail}, nil
}

// measureCached returns the engine's timing from the measurement cache of
// cfg, or measures and caches it, and logs the result.
func measureCached(ctx context.Context, cfg Config, engine blocks.Engine, log *slog.Logger) (Timing, error) {
	dir := cfg.MeasureCacheDir
	if dir == "" {
		var err error
		if dir, err = defaultMeasureDir(); err != nil {
			log.Warn("no measurement cache", "err", err)
			dir = ""
		}
	}
	key, err := newMeasureKey(cfg.Model, engine.Info(), engine.Span())
	if err != nil {
		log.Warn("measurement cache disabled: cannot identify the model file", "err", err)
		dir = ""
	}
	start := time.Now()
	log.Info("measuring tau and tauI (or reading them from the measurement cache)", "span", engine.Span().String(), "remeasure", cfg.Remeasure)
	t, err := loadOrMeasure(ctx, engine, dir, key, cfg.Remeasure, func(msg string, err error) { log.Warn(msg, "dir", dir, "err", err) })
	if err != nil {
		return Timing{}, err
	}
	log.Info("measured span", "span", engine.Span().String(), "tau", t.Tau, "tauI_intercept", t.TauI.Intercept,
		"tauI_slope", t.TauI.Slope, "cached", t.Detail.Cached, "hardware", t.Detail.Hardware,
		"took", time.Since(start).Round(time.Millisecond).String())
	return t, nil
}
