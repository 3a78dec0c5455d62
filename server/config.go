package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrBadConfig: a Config field is out of range; the message names the
	// flag.
	ErrBadConfig = errors.New("server: bad config")
	// ErrMeasure: the start-up measurement of tau and tauI failed.
	ErrMeasure = errors.New("server: measurement failed")
)

// DefaultMemorySessions is how many full-context sessions the default
// memory budget (Config.MemoryBytes = 0) makes room for.
const DefaultMemorySessions = 16

// Config is a server's configuration; each field is one flag of
// `swarm serve`.
type Config struct {
	// Model is the model path (--model): a .gguf file, a llama2.c .bin
	// checkpoint or a Hugging Face directory. Only the span's blocks are read.
	Model string
	// Tokenizer is a tokenizer file (--tokenizer). A server computes blocks
	// only and never loads it; it is accepted so that one model description
	// works for serve and generate, and passed to blocks.Open.
	Tokenizer string
	// OpenFile, if not nil, replaces os.Open for the model's weights files
	// (blocks.WithOpenFile). It is not a flag: `swarm serve --model
	// ORG/REPO` sets it to the hub snapshot's opener, which downloads only
	// the bytes the span's tensors occupy as they are read.
	OpenFile func(path string) (blocks.File, error)
	// Blocks is the span hosted (--blocks START:END, 0-based half-open).
	Blocks swarm.Span
	// Device names the engine backend computing the blocks (--device,
	// blocks.LookupBackend): "" or "cpu" for the built-in CPU engine.
	Device string
	// CacheDType is the element type of the attention caches
	// (--cache-dtype): swarm.DTypeF32 or DTypeF16, which halves
	// CacheBytesPerToken (s_c of memory model eq. 2) and so roughly doubles
	// the sessions --memory admits, at slightly different logits.
	// DTypeInvalid (the zero value) means the backend's default (f32 on
	// the CPU).
	CacheDType swarm.DType
	// ModelName replaces the model's name read from its file (--model-name),
	// ModelInfo.Name everywhere: in GET /v1/info and the registry, which
	// clients and ingresses match, so that two conversions of one model
	// (say an f16 safetensors directory and a q8_0 GGUF) given the same
	// name serve one swarm. Empty: the file's name.
	ModelName string
	// Listen is the TCP address to listen on (--listen HOST:PORT; port 0
	// lets the OS choose).
	Listen string
	// MemoryBytes is M_j (--memory), bytes for block weights plus attention
	// caches, the budget of memory model (2). 0 means the weights plus room
	// for DefaultMemorySessions sessions of the model's whole context.
	MemoryBytes int64
	// MaxSessions caps the open sessions (--max-sessions); 0 means no cap.
	MaxSessions int
	// SessionIdleTimeout closes a session that has had no step queued or
	// computing for this long (--session-idle-timeout), releasing its
	// attention caches and telling the client CodeSessionExpired, so that
	// sessions opened and then left alone cannot hold the memory others
	// need. The client opens a new session and replays its history to go
	// on. 0 disables it.
	SessionIdleTimeout time.Duration
	// MaxSessionsPerConn caps the sessions open or waiting for admission on
	// one connection (--max-sessions-per-conn); 0 means no cap. swarm's
	// clients use one connection per session.
	MaxSessionsPerConn int
	// MaxSessionsPerPeer caps the sessions open or waiting for admission
	// from one remote peer: an IP address for websocket connections, a
	// libp2p peer id for streams (--max-sessions-per-peer); 0 means no
	// cap. A proxy is one peer for all its users: raise it for a busy one.
	MaxSessionsPerPeer int
	// EmulateLatency is added before every reply frame and every /v1/info
	// answer (--emulate-latency), to imitate a WAN link in local
	// experiments; 0 adds nothing.
	EmulateLatency time.Duration
	// DrainTimeout is how long a graceful shutdown lets open sessions run
	// before telling them CodeShuttingDown (--drain-timeout); 0 tells them
	// at once.
	DrainTimeout time.Duration
	// Remeasure forces measuring tau and tauI even when the measurement
	// cache holds them (--remeasure).
	Remeasure bool
	// MeasureCacheDir is where measurements are cached (--measure-cache);
	// empty means os.UserCacheDir()/swarm/measure.
	MeasureCacheDir string
	// Timing, if not nil, is the measurement the server adopts instead of
	// measuring its span: tau_j and tauI_j are per block, the same on any
	// span of the model on one machine, so a server that moves to another
	// span keeps the figures it advertised (live replanning then sees the
	// same fleet before and after the move, and converges).
	Timing *Timing
}

// Defaults of the session limits (see Config).
const (
	// DefaultSessionIdleTimeout is twice the client's 30 s step timeout: a
	// server whose neighbour in a chain hangs is idle until the client's
	// step timeout replaces that neighbour, and must not expire first (the
	// client would then replay this hop too). Long prefills upstream are
	// covered as well.
	DefaultSessionIdleTimeout = 60 * time.Second
	// DefaultMaxSessionsPerConn: swarm's clients open one session per
	// connection; 16 leaves room for other clients' multiplexing.
	DefaultMaxSessionsPerConn = 16
	// DefaultMaxSessionsPerPeer bounds what one host can hold at once.
	DefaultMaxSessionsPerPeer = 256
)

// DefaultConfig returns the defaults of `swarm serve`: listen on
// 127.0.0.1:0, default memory, no cap on open sessions in all but the
// per-connection and per-peer caps, a 60 s session idle timeout, no
// emulated latency, a 30 s drain timeout. Model and Blocks have no default.
func DefaultConfig() Config {
	return Config{
		Listen:             "127.0.0.1:0",
		DrainTimeout:       30 * time.Second,
		SessionIdleTimeout: DefaultSessionIdleTimeout,
		MaxSessionsPerConn: DefaultMaxSessionsPerConn,
		MaxSessionsPerPeer: DefaultMaxSessionsPerPeer,
	}
}

// Validate checks the fields that do not need the model and returns an
// error wrapping ErrBadConfig naming the first bad flag. New checks the span
// and the memory against the model.
func (c Config) Validate() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("%w: --model is required", ErrBadConfig)
	case c.Blocks == swarm.Span{}:
		return fmt.Errorf("%w: --blocks START:END is required", ErrBadConfig)
	case c.MemoryBytes < 0:
		return fmt.Errorf("%w: --memory %d bytes, want >= 0 (0 = default)", ErrBadConfig, c.MemoryBytes)
	case c.MaxSessions < 0:
		return fmt.Errorf("%w: --max-sessions %d, want >= 0 (0 = no cap)", ErrBadConfig, c.MaxSessions)
	case c.SessionIdleTimeout < 0:
		return fmt.Errorf("%w: --session-idle-timeout %v, want >= 0 (0 = never)", ErrBadConfig, c.SessionIdleTimeout)
	case c.MaxSessionsPerConn < 0:
		return fmt.Errorf("%w: --max-sessions-per-conn %d, want >= 0 (0 = no cap)", ErrBadConfig, c.MaxSessionsPerConn)
	case c.MaxSessionsPerPeer < 0:
		return fmt.Errorf("%w: --max-sessions-per-peer %d, want >= 0 (0 = no cap)", ErrBadConfig, c.MaxSessionsPerPeer)
	case c.EmulateLatency < 0:
		return fmt.Errorf("%w: --emulate-latency %v, want >= 0", ErrBadConfig, c.EmulateLatency)
	case c.DrainTimeout < 0:
		return fmt.Errorf("%w: --drain-timeout %v, want >= 0", ErrBadConfig, c.DrainTimeout)
	}
	if err := c.Blocks.Validate(0); err != nil {
		return fmt.Errorf("%w: --blocks: %w", ErrBadConfig, err)
	}
	if _, err := c.backend(); err != nil {
		return err
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("%w: --listen %q: want HOST:PORT (e.g. 127.0.0.1:0): %w", ErrBadConfig, c.Listen, err)
		}
	}
	return nil
}

// DeviceHelp is the --help text of --device: the registered backends.
func DeviceHelp() string {
	return "where the blocks are computed: auto (a GPU when one is usable, else cpu), or one of the engine backends built in: " +
		strings.Join(blocks.BackendNames(), ", ") + " (cuda:N for GPU N; /v1/info advertises it and its attention-cache dtype). " +
		"On cuda, SWARM_CUDA_GEMM picks the matrix products: auto (the default: swarm's tensor-core kernels, mma, on " +
		"compute capability 8.0 and later, else its matvec kernels), mma, matvec or cublas (cuBLAS); the choices differ " +
		"in the last bits, so servers that replay each other's sessions should share one. SWARM_CUDA_PROFILE=pass|ops " +
		"prints where the GPU passes spent their time"
}

// autoBackend caches --device auto's choice for the process: the probe
// opens the GPU libraries once, and every engine of one server then uses
// the same backend.
var autoBackend = sync.OnceValues(func() (blocks.Backend, string) { return blocks.AutoBackend() })

// lookupBackend resolves --device: auto's choice, or the named backend.
func (c Config) lookupBackend() (blocks.Backend, error) {
	if c.Device == blocks.AutoBackendName {
		b, _ := autoBackend()
		return b, nil
	}
	return blocks.LookupBackend(c.Device)
}

// AutoDevice says what --device auto chooses here and why.
func AutoDevice() string {
	_, why := autoBackend()
	return why
}

// DeviceMemory is the free memory of the configured backend's own device
// (a GPU's), bytes, when the backend has one (a method MemoryBytes()
// (int64, error), as the CUDA backend has); ok is false for the CPU, whose
// memory is the machine's. Errors wrap ErrBadConfig (an unknown --device)
// or are the device's own.
func (c Config) DeviceMemory() (bytes int64, ok bool, err error) {
	b, err := c.backend()
	if err != nil {
		return 0, false, err
	}
	return deviceMemory(b)
}

// deviceMemory asks b for its device's free memory (see DeviceMemory).
func deviceMemory(b blocks.Backend) (int64, bool, error) {
	d, ok := b.(interface{ MemoryBytes() (int64, error) })
	if !ok {
		return 0, false, nil
	}
	m, err := d.MemoryBytes()
	if err != nil {
		return 0, true, fmt.Errorf("server: free memory of device %s: %w", b.Name(), err)
	}
	return m, true, nil
}

// backend is the configured backend (--device) keeping its attention
// caches as --cache-dtype says. Errors wrap ErrBadConfig.
func (c Config) backend() (blocks.Backend, error) {
	b, err := c.lookupBackend()
	if err != nil {
		return nil, fmt.Errorf("%w: --device: %w", ErrBadConfig, err)
	}
	if c.CacheDType == swarm.DTypeInvalid {
		return b, nil
	}
	if b, err = blocks.WithCacheDType(b, c.CacheDType); err != nil {
		return nil, fmt.Errorf("%w: --cache-dtype: %w", ErrBadConfig, err)
	}
	return b, nil
}

// loadEngineQuiet builds the configured backend's engine for the span of m.
func (c Config) loadEngineQuiet(m *blocks.Model) (blocks.Engine, error) {
	b, err := c.backend()
	if err != nil {
		return nil, err
	}
	engine, err := m.LoadSpanWith(b, c.Blocks)
	if err != nil {
		return nil, fmt.Errorf("server: load blocks %s on the %s backend: %w", c.Blocks, b.Name(), err)
	}
	return engine, nil
}

// ModelOptions are the blocks.Open options of the configuration: the
// tokenizer and the file opener, when set.
func (c Config) ModelOptions() []blocks.Option {
	var opts []blocks.Option
	if c.Tokenizer != "" {
		opts = append(opts, blocks.WithTokenizer(c.Tokenizer))
	}
	if c.ModelName != "" {
		opts = append(opts, blocks.WithName(c.ModelName))
	}
	if c.OpenFile != nil {
		opts = append(opts, blocks.WithOpenFile(c.OpenFile))
	}
	return opts
}

// loadEngine is loadEngineQuiet with progress lines: the start, and the
// end with its duration and the weight bytes loaded (a first load of a
// large span reads gigabytes, for tens of seconds).
func (c Config) loadEngine(m *blocks.Model, log *slog.Logger) (blocks.Engine, error) {
	start := time.Now()
	log.Info("loading span", "model", c.Model, "blocks", c.Blocks.String(), "device", c.Device)
	e, err := c.loadEngineQuiet(m)
	if err != nil {
		return nil, err
	}
	log.Info("loaded span", "blocks", c.Blocks.String(), "weights", humanize.IBytes(uint64(max(e.WeightBytes(), 0))),
		"took", time.Since(start).Round(time.Millisecond).String())
	return e, nil
}
