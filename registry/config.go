package registry

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/swarmllm/swarm/registry/crdt"
)

// Config holds the registry's timing; each field maps one-to-one to a flag
// registered by AddFlags. Start from DefaultConfig, DefaultLANConfig or
// DefaultWANConfig.
type Config struct {
	// HeartbeatInterval is the time between two heartbeats (version bumps)
	// of a publishing node (--heartbeat-interval).
	HeartbeatInterval time.Duration
	// SuspectAfter is the silence after which a node is SUSPECTED and
	// excluded from routing (--suspect-after); at least two heartbeats.
	SuspectAfter time.Duration
	// LeftAfter is the silence after which a node is LEFT (--left-after),
	// longer than SuspectAfter.
	LeftAfter time.Duration
	// Retention is how long LEFT entries are kept before they are
	// garbage-collected (--retention). It must exceed the longest partition
	// that should heal without re-announcement.
	Retention time.Duration
	// AntiEntropyInterval is the time between two full-state push-pull
	// exchanges with a random peer (--anti-entropy-interval).
	AntiEntropyInterval time.Duration
	// MaxClockSkew is the wall-clock difference between nodes the registry
	// tolerates (--max-clock-skew): entries stamped further in the future
	// are refused, and the owner's timestamp alone raises SUSPECTED only
	// after SuspectAfter + MaxClockSkew.
	MaxClockSkew time.Duration
}

// DefaultLANConfig suits a data centre or a single machine: 1 s heartbeats,
// SUSPECTED after 3 s of silence, LEFT after 30 s, kept 1 h, anti-entropy
// every 2 s, 1 s of clock skew.
func DefaultLANConfig() Config {
	return Config{
		HeartbeatInterval:   time.Second,
		SuspectAfter:        3 * time.Second,
		LeftAfter:           30 * time.Second,
		Retention:           time.Hour,
		AntiEntropyInterval: 2 * time.Second,
		MaxClockSkew:        time.Second,
	}
}

// DefaultWANConfig suits volunteers across the Internet: 5 s heartbeats,
// SUSPECTED after 20 s, LEFT after 2 min, kept 24 h (OpenTela's retention),
// anti-entropy every 10 s, 5 s of clock skew.
func DefaultWANConfig() Config {
	return Config{
		HeartbeatInterval:   5 * time.Second,
		SuspectAfter:        20 * time.Second,
		LeftAfter:           2 * time.Minute,
		Retention:           24 * time.Hour,
		AntiEntropyInterval: 10 * time.Second,
		MaxClockSkew:        5 * time.Second,
	}
}

// DefaultConfig is DefaultLANConfig.
func DefaultConfig() Config { return DefaultLANConfig() }

// AddFlags registers the registry flags on fs with c's current values as
// defaults, binding them to c's fields.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", c.HeartbeatInterval,
		"time between two registry heartbeats of this node")
	fs.DurationVar(&c.SuspectAfter, "suspect-after", c.SuspectAfter,
		"silence after which a node is SUSPECTED and excluded from routing (at least 2 heartbeats)")
	fs.DurationVar(&c.LeftAfter, "left-after", c.LeftAfter,
		"silence after which a node is LEFT (longer than --suspect-after)")
	fs.DurationVar(&c.Retention, "retention", c.Retention,
		"how long LEFT registry entries are kept before they are garbage-collected")
	fs.DurationVar(&c.AntiEntropyInterval, "anti-entropy-interval", c.AntiEntropyInterval,
		"time between two full-state registry exchanges with a random peer")
	fs.DurationVar(&c.MaxClockSkew, "max-clock-skew", c.MaxClockSkew,
		"wall-clock difference between nodes tolerated by the registry (less than --suspect-after)")
}

// Validate returns an error wrapping ErrBadConfig naming the first bad field.
func (c Config) Validate() error {
	switch {
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("%w: --heartbeat-interval %v, want > 0", ErrBadConfig, c.HeartbeatInterval)
	case c.SuspectAfter < 2*c.HeartbeatInterval:
		return fmt.Errorf("%w: --suspect-after %v, want at least two heartbeats (>= %v)",
			ErrBadConfig, c.SuspectAfter, 2*c.HeartbeatInterval)
	case c.LeftAfter <= c.SuspectAfter:
		return fmt.Errorf("%w: --left-after %v, want more than --suspect-after %v", ErrBadConfig, c.LeftAfter, c.SuspectAfter)
	case c.Retention <= 0:
		return fmt.Errorf("%w: --retention %v, want > 0", ErrBadConfig, c.Retention)
	case c.AntiEntropyInterval <= 0:
		return fmt.Errorf("%w: --anti-entropy-interval %v, want > 0", ErrBadConfig, c.AntiEntropyInterval)
	case c.MaxClockSkew < 0 || c.MaxClockSkew >= c.SuspectAfter:
		return fmt.Errorf("%w: --max-clock-skew %v, want >= 0 and less than --suspect-after %v",
			ErrBadConfig, c.MaxClockSkew, c.SuspectAfter)
	}
	return nil
}

// timing converts the liveness fields for the CRDT core.
func (c Config) timing() crdt.Timing {
	return crdt.Timing{
		SuspectAfterMs: c.SuspectAfter.Milliseconds(),
		LeftAfterMs:    c.LeftAfter.Milliseconds(),
		RetentionMs:    c.Retention.Milliseconds(),
		MaxClockSkewMs: c.MaxClockSkew.Milliseconds(),
	}
}
