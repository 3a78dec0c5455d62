package churn

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Help is the long help of `swarm bench churn`.
const Help = `bench churn starts a swarm on this machine (--servers ` + "`swarm serve --blocks auto`" + `
processes and a ` + "`swarm proxy`" + ` joined to them, all on 127.0.0.1) and runs --streams
concurrent loops of greedy completions through the proxy's OpenAI API: first a
no-churn phase of --duration, then a churn phase of the same length in which,
every --kill-every (jittered up to 1.25x), a random server the others can spare
without losing a block is killed (SIGKILL), stopped (SIGSTOP; resumed or killed
at the next disruption) or terminated (SIGTERM), and replacements join until
--servers run. Every output must equal its prompt's output in the no-churn
phase. It prints the requests, failed ones, wrong outputs and each phase's
p50/p99 request time in seconds; the processes' logs go to stderr.

Example:
  swarm bench churn --model stories260K.bin --tokenizer tok512.bin --servers 6 --streams 6 --duration 90s --kill-every 8s --json`

// DefaultPrompts are the prompts the streams cycle through: story openings
// that stories260K (TinyStories) continues.
var DefaultPrompts = []string{"Once upon a time", "Lily had a cat", "The sun was hot", "Tom and his dog"}

// Config is one harness run.
type Config struct {
	// Model and Tokenizer are the model's files, as `swarm serve` takes
	// them (Tokenizer may be empty for a GGUF).
	Model, Tokenizer string
	// Exe is the swarm binary the servers and the proxy run (default:
	// this process's executable).
	Exe string
	// Servers is the number of servers kept running (>= 2).
	Servers int
	// Streams is the number of concurrent request loops (>= 1).
	Streams int
	// Duration is the length of each phase, no churn then churn.
	Duration time.Duration
	// KillEvery is the least time between two disruptions; each wait is
	// drawn uniformly from [KillEvery, 1.25 KillEvery].
	KillEvery time.Duration
	// MaxTokens is the tokens each request generates greedily.
	MaxTokens int
	// ServerBlocks is the number of blocks each server has memory for
	// (with room for Streams sessions of the model's whole context); 0
	// means ceil(2 nBlocks / Servers), at least 1, so that the swarm holds
	// each block about twice.
	ServerBlocks int
	// StartTimeout bounds a process's start (load, measure, join) and the
	// wait for the proxy to serve a first request.
	StartTimeout time.Duration
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// Seed seeds the choice of victims, signals and jitter.
	Seed uint64
	// IdleOpens, when > 0, adds an idle-attack phase between the two: the
	// streams run as at rest while one client sends IdleOpens Open frames
	// (max_length 1) round-robin to the servers and never steps them.
	IdleOpens int
	// BlackHole adds a black-hole phase before the churn phase: a fake
	// server, registered under its own key, advertises the whole model at
	// a port that accepts and never answers.
	BlackHole bool
	// SlowBodies, when > 0, adds a slow-body phase (no churn) after the
	// rest phase: that many connections to the proxy send a request's
	// headers and two bytes of its body, then nothing, while the streams
	// run; each must be closed by the proxy's read timeout.
	SlowBodies int
	// ProxyReadTimeout is the proxy's --read-timeout; 0 keeps its default.
	ProxyReadTimeout time.Duration
	// HugePromptBytes, when > 0, sends hugePromptRequests completions with
	// a prompt of this many bytes right after the warm-up, one after
	// another, each to be refused with 400.
	HugePromptBytes int
	// Prompts are cycled through by the streams (default DefaultPrompts).
	Prompts []string
}

// DefaultConfig returns 6 servers, 6 streams, 90 s phases, a disruption
// every 8-10 s and 32-token requests.
func DefaultConfig() Config {
	return Config{Servers: 6, Streams: 6, Duration: 90 * time.Second, KillEvery: 8 * time.Second, MaxTokens: 32,
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Seed: 1, Prompts: DefaultPrompts}
}

// AddFlags registers the harness flags of c's fields on fs, with c's
// values as the defaults.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Model, "model", c.Model, "model the servers host: a .gguf file, a llama2.c .bin checkpoint or a Hugging Face directory (required)")
	fs.StringVar(&c.Tokenizer, "tokenizer", c.Tokenizer, "tokenizer file of the model (a llama2.c checkpoint needs one)")
	fs.IntVar(&c.Servers, "servers", c.Servers, "servers kept running (a replacement joins after each disruption)")
	fs.IntVar(&c.Streams, "streams", c.Streams, "concurrent request loops through the proxy")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of each phase: no churn, then churn")
	fs.DurationVar(&c.KillEvery, "kill-every", c.KillEvery, "time between two disruptions of the churn phase, jittered up to 1.25x")
	fs.IntVar(&c.MaxTokens, "max-tokens", c.MaxTokens, "tokens each request generates (greedy)")
	fs.IntVar(&c.ServerBlocks, "server-blocks", c.ServerBlocks, "blocks each server has memory for; 0 = ceil(2 blocks / servers)")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "how long a server or the proxy may take to start")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "how long one request may take before it counts as failed")
	fs.IntVar(&c.IdleOpens, "idle-attack", c.IdleOpens, "if > 0, add an idle-attack phase (no churn) between the two: one client sends this many\n"+
		"session Opens (max_length 1) to the servers' websockets and never steps them")
	fs.BoolVar(&c.BlackHole, "black-hole", c.BlackHole, "add a black-hole phase (no churn) before the churn phase: a fake registry entry advertises the whole\n"+
		"model at a port that accepts and never answers")
	fs.IntVar(&c.SlowBodies, "slow-bodies", c.SlowBodies, "if > 0, add a slow-body phase (no churn) after the first: this many connections to the proxy send\n"+
		"a request's headers and 2 bytes of its body, then nothing; the proxy must close each by its read timeout")
	fs.DurationVar(&c.ProxyReadTimeout, "proxy-read-timeout", c.ProxyReadTimeout, "the proxy's --read-timeout (0 = its default)")
	fs.IntVar(&c.HugePromptBytes, "huge-prompt", c.HugePromptBytes, "if > 0, after the warm-up send 5 completions with a prompt of this many bytes, one after another,\n"+
		"and report their statuses, times and the proxy's memory before and after (each must be a 400)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the victims, signals and jitter")
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	switch {
	case signals == nil:
		return errors.New("churn: needs a Unix system: servers are disrupted with SIGKILL, SIGSTOP and SIGTERM")
	case c.Model == "":
		return errors.New("churn: no model: give --model")
	case c.Servers < 2:
		return fmt.Errorf("churn: --servers %d, want >= 2 (one must survive each disruption)", c.Servers)
	case c.Streams < 1:
		return fmt.Errorf("churn: --streams %d, want >= 1", c.Streams)
	case c.Duration <= 0:
		return fmt.Errorf("churn: --duration %v, want > 0", c.Duration)
	case c.KillEvery <= 0:
		return fmt.Errorf("churn: --kill-every %v, want > 0", c.KillEvery)
	case c.MaxTokens < 1:
		return fmt.Errorf("churn: --max-tokens %d, want >= 1", c.MaxTokens)
	case c.IdleOpens < 0 || c.SlowBodies < 0 || c.HugePromptBytes < 0:
		return fmt.Errorf("churn: --idle-attack %d, --slow-bodies %d, --huge-prompt %d: want >= 0", c.IdleOpens, c.SlowBodies, c.HugePromptBytes)
	case c.ProxyReadTimeout < 0:
		return fmt.Errorf("churn: --proxy-read-timeout %v, want >= 0", c.ProxyReadTimeout)
	case c.ServerBlocks < 0:
		return fmt.Errorf("churn: --server-blocks %d, want >= 0", c.ServerBlocks)
	case c.StartTimeout <= 0 || c.RequestTimeout <= 0:
		return fmt.Errorf("churn: --start-timeout %v and --request-timeout %v, want > 0", c.StartTimeout, c.RequestTimeout)
	case len(c.Prompts) == 0:
		return errors.New("churn: no prompts")
	}
	return nil
}
