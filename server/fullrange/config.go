package fullrange

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrBadConfig: a Config field is out of range; the message names the
	// flag.
	ErrBadConfig = errors.New("fullrange: bad config")
	// ErrBackend: the engine is unreachable, unhealthy, died, or answered
	// something unexpected.
	ErrBackend = errors.New("fullrange: backend failed")
)

// Config configures a full-range server; each field is one flag of `swarm
// serve --full-range`.
type Config struct {
	// BackendURL is the engine's base URL (--backend-url), e.g.
	// http://127.0.0.1:8000 (its API is BackendURL/v1/...).
	BackendURL string
	// Process is a shell command starting the engine as a child process
	// (--process "vllm serve ..."); BackendURL must say where it listens.
	Process string
	// ModelName is the swarm's name of the model (--model-name), which
	// ingresses match; empty uses the engine's first /v1/models id.
	ModelName string
	// Blocks is L, the model's number of blocks; the replica advertises
	// span [0, L). Required (from --model PATH or --n-blocks).
	Blocks int
	// Model is the model's description when known (from --model PATH);
	// nil otherwise.
	Model *swarm.ModelInfo
	// MaxLength is the longest session in tokens the engine takes; 0 if
	// unknown.
	MaxLength int
	// Provider names who runs the replica (--provider).
	Provider string
	// Listen is the sidecar's TCP address (--listen).
	Listen string
	// HealthInterval is the period of the /health and /v1/models polls.
	HealthInterval time.Duration
	// StartTimeout bounds the wait for the engine's first healthy /health.
	StartTimeout time.Duration
	// MeasureTokens is the number of tokens of the timed completion that
	// measures the per-token time (>= 2).
	MeasureTokens int
}

// DefaultConfig returns the defaults: listen on 127.0.0.1:0, poll every 5
// s, wait up to 10 minutes for the engine, time completions of 32 tokens.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:0", HealthInterval: 5 * time.Second, StartTimeout: 10 * time.Minute, MeasureTokens: 32}
}

// Validate returns an error wrapping ErrBadConfig naming the first bad
// flag.
func (c Config) Validate() error {
	u, err := url.Parse(c.BackendURL)
	switch {
	case c.BackendURL == "":
		return fmt.Errorf("%w: --backend-url is required (the engine's http://HOST:PORT, also with --process)", ErrBadConfig)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%w: --backend-url %q: want http://HOST:PORT", ErrBadConfig, c.BackendURL)
	case c.Blocks < 1:
		return fmt.Errorf("%w: the model's number of blocks L is unknown: give --model PATH (only its metadata is read) or --n-blocks L", ErrBadConfig)
	case c.HealthInterval <= 0:
		return fmt.Errorf("%w: --health-interval %v, want > 0", ErrBadConfig, c.HealthInterval)
	case c.StartTimeout <= 0:
		return fmt.Errorf("%w: --start-timeout %v, want > 0", ErrBadConfig, c.StartTimeout)
	case c.MeasureTokens < 2:
		return fmt.Errorf("%w: --measure-tokens %d, want >= 2", ErrBadConfig, c.MeasureTokens)
	case c.MaxLength < 0:
		return fmt.Errorf("%w: --max-length %d, want >= 0", ErrBadConfig, c.MaxLength)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("%w: --listen %q: want HOST:PORT: %w", ErrBadConfig, c.Listen, err)
	}
	return nil
}
