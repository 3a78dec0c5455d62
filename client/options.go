package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrBadOption: an Option's argument is out of range.
	ErrBadOption = errors.New("client: bad option")
	// ErrNoChain: no chain of usable servers covers the blocks; the
	// concrete error is a *NoChainError naming the uncovered blocks.
	ErrNoChain = errors.New("client: no chain of servers")
	// ErrModelMismatch: a server hosts another model than the client's.
	ErrModelMismatch = errors.New("client: model mismatch")
	// ErrStepTimeout: a server did not answer a step within the step
	// timeout.
	ErrStepTimeout = errors.New("client: step timed out")
	// ErrFailover: a hop failed and no replacement could take over.
	ErrFailover = errors.New("client: failover failed")
	// ErrClosed: the session is closed.
	ErrClosed = errors.New("client: session closed")
	// ErrProtocol: a server answered with a frame the protocol does not
	// allow there.
	ErrProtocol = errors.New("client: protocol violation")
	// ErrBadOutput: a server returned hidden states holding NaN or an
	// infinity; the hop fails over like a dead server.
	ErrBadOutput = errors.New("client: server returned non-finite hidden states")
	// ErrUnhealthy: the candidate source (HealthSource: the registry)
	// reports a server of the chain unhealthy (SUSPECTED, DOWN, LEFT); the
	// hop fails over without waiting for the step timeout.
	ErrUnhealthy = errors.New("client: server reported unhealthy")
	// ErrArgument: a call's argument is out of range (position, length).
	ErrArgument = errors.New("client: bad argument")
)

// Dialer opens a frame connection to a server's inference endpoint. The
// default dials the websocket ep.Inference; a libp2p transport supplies its
// own.
type Dialer func(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error)

// InfoFetcher reads a server's Info document (what GET /v1/info answers).
// The default, HTTPInfo, does GET ep.Info; a libp2p transport reads it from
// a /swarm/info/1 stream. The client times the call for the server's RTT
// and bounds it with the info timeout.
type InfoFetcher func(ctx context.Context, ep api.Endpoint) (api.Info, error)

// Source supplies candidate servers each time a session chooses servers: at
// Open and at every failover. Package node implements it over the registry
// (SERVING servers of the model, SUSPECTED/DOWN/LEFT ones left out).
type Source interface {
	// Endpoints returns the candidate servers now. An error fails the Open
	// or failover that asked.
	Endpoints(ctx context.Context) ([]api.Endpoint, error)
}

// HealthSource is a Source that learns of failing servers before the
// client's own timeouts do: the registry marks a silent server SUSPECTED
// within seconds, where a step timeout is 30 s. A session waiting for a
// step's result at a server its source reports unhealthy fails that hop
// over at once (the error wraps ErrUnhealthy). Package node implements it.
type HealthSource interface {
	Source
	// Changed returns a channel closed at the next change of any server's
	// health; take it before calling Health, so no change is missed.
	Changed() <-chan struct{}
	// Health returns nil while the server at ep may be used, else why not.
	Health(ep api.Endpoint) error
}

// WaitEvent reports that a server queued a session's Open for cache room
// (a Waiting frame, paper 003 eq. 20).
type WaitEvent struct {
	// Server is the server's inference URL.
	Server string
	// Span is the blocks the session asked it to process.
	Span swarm.Span
	// Position is the number of sessions queued ahead (0 = next).
	Position int
	// QueueLen is the number of sessions queued, this one included.
	QueueLen int
	// EstimatedWait is the server's estimate of the wait.
	EstimatedWait time.Duration
}

// Option configures New.
type Option func(*config) error

type config struct {
	stepTimeout  time.Duration
	allocTimeout time.Duration
	infoTimeout  time.Duration
	wireDType    swarm.DType
	replayChunk  int
	maxFailovers int
	failoverWait time.Duration
	log          *slog.Logger
	httpClient   *http.Client
	dial         Dialer
	fetchInfo    InfoFetcher // nil: HTTPInfo(httpClient)
	source       Source      // nil: only the servers given to New
	onWait       func(WaitEvent)
	onRoute      func(RouteEvent)
	bans         *Bans // nil: New makes one per client
}

// Defaults, all in one place.
const (
	// DefaultStepTimeout bounds one decode step at one server.
	DefaultStepTimeout = 30 * time.Second
	// DefaultAllocTimeout is how long a server may queue a session for
	// cache room (alloc_timeout of Open).
	DefaultAllocTimeout = 30 * time.Second
	// DefaultInfoTimeout bounds the probe of one server (both reads of its
	// info document): a server that has not answered by then is left out
	// of that round, so one hung server never stalls every new session.
	DefaultInfoTimeout = 2 * time.Second
	// DefaultMaxFailovers bounds the hop replacements of one session.
	DefaultMaxFailovers = 16
	// DefaultFailoverWait is how long a failover waits for a server to
	// cover the failed hop's blocks when none does (WithFailoverWait).
	DefaultFailoverWait = 10 * time.Second
)

func defaultConfig() config {
	return config{
		stepTimeout:  DefaultStepTimeout,
		allocTimeout: DefaultAllocTimeout,
		infoTimeout:  DefaultInfoTimeout,
		wireDType:    swarm.DTypeF32,
		maxFailovers: DefaultMaxFailovers,
		failoverWait: DefaultFailoverWait,
		log:          slog.New(slog.DiscardHandler),
		httpClient:   &http.Client{},
		dial:         DialWebsocket,
	}
}

// WithStepTimeout sets how long one server may take to answer a decode
// step (longer inputs get proportionally more, see Session.Forward) before
// the client fails over. It must be positive.
func WithStepTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: step timeout %v, want > 0", ErrBadOption, d)
		}
		c.stepTimeout = d
		return nil
	}
}

// WithAllocTimeout sets alloc_timeout of Open: how long a server may queue
// the session for attention-cache room. 0 asks for an immediate answer.
func WithAllocTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: alloc timeout %v, want >= 0", ErrBadOption, d)
		}
		c.allocTimeout = d
		return nil
	}
}

// WithInfoTimeout bounds the probe of one server during discovery (both
// reads of its info document; DefaultInfoTimeout by default): a server
// that answered once keeps that answer, one that never answered is left
// out of the round. It must be positive.
func WithInfoTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: info timeout %v, want > 0", ErrBadOption, d)
		}
		c.infoTimeout = d
		return nil
	}
}

// WithWireDType sets the dtype of hidden states on the wire: swarm.DTypeF32
// (default, exact), DTypeF16 or DTypeBF16 (half the bytes, rounded).
func WithWireDType(dt swarm.DType) Option {
	return func(c *config) error {
		switch dt {
		case swarm.DTypeF32, swarm.DTypeF16, swarm.DTypeBF16:
			c.wireDType = dt
			return nil
		}
		return fmt.Errorf("%w: wire dtype %s, want f32, f16 or bf16", ErrBadOption, dt)
	}
}

// WithReplayChunk sets how many tokens of history one replay step carries
// after a failover: 0 (default) sends a hop's whole history in one step
// (a prefill), n > 0 at most n tokens per step. The engine's prefill and
// decode give bit-identical attention caches (TestEnginePrefillMatchesDecode),
// so the chunking does not change the output.
func WithReplayChunk(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: replay chunk %d, want >= 0", ErrBadOption, n)
		}
		c.replayChunk = n
		return nil
	}
}

// WithMaxFailovers bounds how many hop replacements one session may make.
func WithMaxFailovers(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: max failovers %d, want >= 0", ErrBadOption, n)
		}
		c.maxFailovers = n
		return nil
	}
}

// WithFailoverWait sets how long a failover waits, when no server covers
// the failed hop's blocks, for the source to report one: a server moving
// its span announces the new one while its old one drains, and a
// replacement joining or rebalancing appears in the registry within a
// gossip round or two. The client routes again at every change its
// HealthSource reports (a plain Source reports none: the failover fails at
// once), until a route exists or d has passed since the hop failed
// (DefaultFailoverWait by default; 0 fails at once). It must be >= 0.
func WithFailoverWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%w: failover wait %v, want >= 0", ErrBadOption, d)
		}
		c.failoverWait = d
		return nil
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrBadOption)
		}
		c.log = l
		return nil
	}
}

// WithHTTPClient sets the HTTP client of GET /v1/info.
func WithHTTPClient(h *http.Client) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrBadOption)
		}
		c.httpClient = h
		return nil
	}
}

// WithDialer replaces the websocket dialer of the inference endpoint.
func WithDialer(d Dialer) Option {
	return func(c *config) error {
		if d == nil {
			return fmt.Errorf("%w: nil dialer", ErrBadOption)
		}
		c.dial = d
		return nil
	}
}

// WithInfoFetcher replaces the GET /v1/info of discovery (default
// HTTPInfo over the WithHTTPClient client).
func WithInfoFetcher(f InfoFetcher) Option {
	return func(c *config) error {
		if f == nil {
			return fmt.Errorf("%w: nil info fetcher", ErrBadOption)
		}
		c.fetchInfo = f
		return nil
	}
}

// WithSource adds candidate servers from src, asked at every Open and
// failover, to those given to New (which may then be empty).
func WithSource(src Source) Option {
	return func(c *config) error {
		if src == nil {
			return fmt.Errorf("%w: nil candidate source", ErrBadOption)
		}
		c.source = src
		return nil
	}
}

// WithBans shares a ban list between clients (an ingress gives all its
// clients one), so that a server one session found failing is left out by
// the others too. By default each Client has its own, with DefaultBanBase
// and DefaultBanMax.
func WithBans(b *Bans) Option {
	return func(c *config) error {
		if b == nil {
			return fmt.Errorf("%w: nil ban list", ErrBadOption)
		}
		c.bans = b
		return nil
	}
}

// WithWaitHook calls f whenever a server queues one of the client's
// sessions for cache room (from the goroutine opening the session).
func WithWaitHook(f func(WaitEvent)) Option {
	return func(c *config) error {
		c.onWait = f
		return nil
	}
}

// RouteEvent reports one run of Route (WS-RR) by the client: at Open (not
// when OpenPlan was given a route) and at each failover.
type RouteEvent struct {
	// Need is the blocks routed: [0, L) at Open, a failed hop's at failover.
	Need swarm.Span
	// Plan is the route chosen (no hops when Err is not nil).
	Plan Plan
	// Err is Route's error.
	Err error
}

// WithRouteHook calls f after every route the client computes (from the
// goroutine opening or failing over the session); metrics and tests count
// routing work with it.
func WithRouteHook(f func(RouteEvent)) Option {
	return func(c *config) error {
		c.onRoute = f
		return nil
	}
}

// DialWebsocket is the default Dialer: a websocket to ep.Inference.
func DialWebsocket(ctx context.Context, ep api.Endpoint, maxPayload int) (api.FrameConn, error) {
	ws, resp, err := websocket.DefaultDialer.DialContext(ctx, ep.Inference, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", ep.Inference, err)
	}
	return api.NewWebsocket(ws, maxPayload), nil
}
