package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/server/admission"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/wire"
)

// Server hosts one span of a model. Create it with New, serve websockets
// with Serve (or mount Handler) and other transports with ServeConn, stop it
// with Shutdown (graceful) and release it with Close.
type Server struct {
	cfg        Config
	log        *slog.Logger
	engine     blocks.Engine
	backend    blocks.Backend // the engine's, for /v1/info
	nonFinite  atomic.Int64   // steps refused for NaN or Inf (Info.NonFiniteSteps)
	info       swarm.ModelInfo
	maxLength  int // longest session accepted: the model's context
	memory     int64
	adm        *admission.Controller
	timing     Timing
	kernels    string                       // swarm.ServerInfo.Kernels: the CPU kernel set, or the GPU backend's Kernels
	steps      *stepper                     // the step loop all sessions compute through
	metrics    atomic.Pointer[Metrics]      // SetMetrics; nil: not reported
	fallback   atomic.Pointer[http.Handler] // SetFallback; nil: 404
	peers      *peerSessions
	maxPayload int // largest frame payload accepted, bytes
	upgrader   websocket.Upgrader

	started  time.Time     // when New returned (ServerInfo.StartedAt)
	draining chan struct{} // closed when Shutdown starts
	conns    sync.WaitGroup
	// loadChanged (1-buffered) is signalled when a session is admitted or
	// released: the load the server advertises changed.
	loadChanged chan struct{}

	mu sync.Mutex
	// Guarded by mu.
	connsLocked     map[*conn]struct{}
	closedLocked    bool // no new connection is served
	releasedLocked  bool // Close ran
	endpointsLocked []string
	// extraEndpointsLocked are advertised after endpointsLocked (AddEndpoints).
	extraEndpointsLocked []string
	signerLocked         *InfoSigner // SetInfoSigner; nil: challenges are not answered
}

// New loads the span cfg.Blocks of the model cfg.Model (only its blocks'
// weights), sets up admission by memory model (2) and measures tau and tauI
// (or reads them from the measurement cache). logger receives the server's
// logs; nil discards them.
//
// Errors wrap ErrBadConfig (bad flags, a span outside the model, memory
// smaller than the span's weights), ErrMeasure, ctx.Err(), or the model
// loader's errors (blocks.ErrFormat, file system errors).
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := blocks.Open(cfg.Model, cfg.ModelOptions()...)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	defer m.Close()
	info := m.Info()
	if err := cfg.Blocks.Validate(info.NBlocks); err != nil {
		return nil, fmt.Errorf("%w: --blocks: %w", ErrBadConfig, err)
	}
	engine, err := cfg.loadEngine(m, logger)
	if err != nil {
		return nil, err
	}
	s, err := newServer(ctx, cfg, logger, engine)
	if err != nil {
		engine.Close()
		return nil, err
	}
	return s, nil
}

// newServer finishes New once the engine is loaded.
func newServer(ctx context.Context, cfg Config, log *slog.Logger, engine blocks.Engine) (*Server, error) {
	info := engine.Info()
	maxLength := info.MaxSeqLen
	if maxLength <= 0 {
		maxLength = 2048
	}
	memory := cfg.MemoryBytes
	if memory == 0 {
		memory = engine.WeightBytes() + DefaultMemorySessions*info.SpanCacheBytes(cfg.Blocks, maxLength)
	}
	adm, err := admission.New(admission.Config{
		Model: info, Span: cfg.Blocks, WeightBytes: engine.WeightBytes(),
		MemoryBytes: memory, MaxSessions: cfg.MaxSessions,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: --memory %d: %w", ErrBadConfig, memory, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	backend, err := cfg.backend()
	if err != nil {
		return nil, err
	}
	log.Info("engine", "backend", backend.Name(), "kernels", blocks.Kernels(), "weights", info.DType.String(),
		"cache_dtype", backend.CacheDType().String(), "span", cfg.Blocks.String())
	if cfg.Device == blocks.AutoBackendName {
		log.Info("device auto", "chose", AutoDevice())
	}
	if d, ok := backend.(interface{ Describe() string }); ok {
		log.Info("device", "device", d.Describe())
	}
	kernels := blocks.Kernels()
	if k, ok := backend.(interface{ Kernels() string }); ok {
		kernels = k.Kernels()
	}
	var t Timing
	if cfg.Timing != nil {
		t = *cfg.Timing
		log.Info("adopted the measurement of the previous span", "span", cfg.Blocks.String(), "tau", t.Tau)
	} else if t, err = measureCached(ctx, cfg, engine, log); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: log, engine: engine, backend: backend, info: info, maxLength: maxLength, memory: memory,
		adm: adm, timing: t, kernels: kernels,
		peers:      newPeerSessions(cfg.MaxSessionsPerPeer),
		maxPayload: wire.MaxStepPayload(maxLength, info.DModel),
		upgrader: websocket.Upgrader{
			// Clients are programs, not browsers: any origin may connect.
			CheckOrigin: func(*http.Request) bool { return true },
		},
		started:     time.Now(),
		draining:    make(chan struct{}),
		loadChanged: make(chan struct{}, 1),
		connsLocked: map[*conn]struct{}{},
	}
	s.steps = newStepper(batchEngine(engine), batchTokens, log, s.observeBatch)
	return s, nil
}

// ModelInfo describes the model the hosted span belongs to.
func (s *Server) ModelInfo() swarm.ModelInfo { return s.info }

// Timing returns the server's measurement (its own, or Config.Timing).
func (s *Server) Timing() Timing { return s.timing }

// Tau returns the measured decode time per block per token tau_j, in
// seconds, and the prefill fit tauI_j(l) (paper 003 Sec. 2.2).
func (s *Server) Tau() (float64, swarm.PrefillFit) { return s.timing.Tau, s.timing.TauI }

// Draining returns a channel that is closed when Shutdown starts.
func (s *Server) Draining() <-chan struct{} { return s.draining }

// isDraining reports whether Shutdown has started.
func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// Info returns the document of GET /v1/info: swarm.ServerInfo (span, tau,
// tauI, memory, cache bytes free, per-session load of eq. 20), the model,
// the state and the admission snapshot.
func (s *Server) Info() api.Info {
	snap := s.adm.Snapshot()
	mi := s.info
	s.mu.Lock()
	endpoints := append(append([]string(nil), s.endpointsLocked...), s.extraEndpointsLocked...)
	signer := s.signerLocked
	s.mu.Unlock()
	id := ""
	switch {
	case signer != nil && signer.Peer != "":
		id = signer.Peer // the node's peer id, its registry node id
	case len(endpoints) > 0:
		id = endpoints[0]
	}
	state := api.StateServing
	if s.isDraining() {
		state = api.StateDraining
	}
	return api.Info{
		ServerInfo: swarm.ServerInfo{
			ID: id, Model: s.info.Name, Span: s.cfg.Blocks, ModelBlocks: s.info.NBlocks,
			Tau: s.timing.Tau, TauI: s.timing.TauI, TauBatch: s.timing.TauBatch,
			MemoryBytes: s.memory, CacheBytesCapacity: s.adm.CacheBudget(), CacheBytesPerToken: s.info.CacheBytesPerToken,
			Device: s.backend.Name(), CacheDType: s.backend.CacheDType(), WeightDType: s.info.DType, Kernels: s.kernels,
			SlidingWindow: s.info.SlidingWindow, SlidingPattern: s.info.SlidingPattern,
			CacheBytesFree: snap.CacheBytesFree,
			Sessions:       snap.Loads(), Endpoints: endpoints, ProtocolVersion: swarm.ProtocolVersion,
			Version: swarm.Version, StartedAt: s.started.Unix(), TokensServed: s.steps.tokens.Load(),
		},
		ModelInfo:      &mi,
		State:          state,
		MaxLength:      s.maxLength,
		Measurement:    s.timing.Detail,
		NonFiniteSteps: s.nonFinite.Load(),
		Admission:      snap,
	}
}

// AddEndpoints adds addresses the server is reached at besides the
// websocket of Serve (e.g. its libp2p multiaddrs, for ServeConn over
// /swarm/inference/1); Info lists them after the websocket URL.
func (s *Server) AddEndpoints(endpoints ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extraEndpointsLocked = append(s.extraEndpointsLocked, endpoints...)
}

// ReserveMemory sets bytes of the server's attention-cache memory aside
// (admission.Controller.SetReserved): sessions are admitted only into
// M - weights - bytes, and Info shows the reservation and the smaller
// CacheBytesFree. node.RunServer reserves the memory of a second span
// while it moves the server live. Raising it fails (wrapping
// admission.ErrNeverFits) when open sessions hold the room; lowering it
// admits queued sessions that now fit. LoadChanged is signalled.
func (s *Server) ReserveMemory(bytes int64) error {
	if err := s.adm.SetReserved(bytes); err != nil {
		return fmt.Errorf("server: reserve memory: %w", err)
	}
	s.notifyLoad()
	return nil
}

// LoadChanged returns a channel that receives (coalesced: it holds one
// signal at most) whenever a session is admitted or released, i.e. when
// Info's Sessions and CacheBytesFree changed. Announcers read Info then;
// the remaining times of open sessions also count down between signals.
func (s *Server) LoadChanged() <-chan struct{} { return s.loadChanged }

// notifyLoad signals LoadChanged.
func (s *Server) notifyLoad() {
	select {
	case s.loadChanged <- struct{}{}:
	default: // a signal is pending
	}
}

// WriteInfo writes the Info document as indented JSON to w, after the
// emulated latency (as GET /v1/info does), for transports other than
// HTTP (the /swarm/info/1 libp2p stream). It returns ctx's error if ctx
// ends during the emulated latency, or w's error.
func (s *Server) WriteInfo(ctx context.Context, w io.Writer) error {
	if !wait(ctx, s.cfg.EmulateLatency) {
		return fmt.Errorf("server: write info: %w", ctx.Err())
	}
	b, err := json.MarshalIndent(s.Info(), "", "  ")
	if err != nil {
		return fmt.Errorf("server: write info: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Handler serves GET /v1/info (JSON) and GET /v1/inference (websocket
// upgrade; one wire frame per binary message); other paths go to the
// handler of SetFallback (404 without one).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.InfoPath, s.serveInfo)
	mux.HandleFunc("GET "+api.InferencePath, s.serveInference)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.InfoPath || r.URL.Path == api.InferencePath {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		if h := s.fallback.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

// SetFallback makes h serve the paths Handler does not (a node's
// dashboard, state and metrics pages).
func (s *Server) SetFallback(h http.Handler) { s.fallback.Store(&h) }

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request) {
	if !wait(r.Context(), s.cfg.EmulateLatency) {
		return
	}
	b, err := json.MarshalIndent(s.Info(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	if c := r.URL.Query().Get(api.InfoChallengeParam); c != "" {
		if !s.signInfo(w, c, b) {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) serveInference(w http.ResponseWriter, r *http.Request) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return // the upgrader answered with an HTTP error
	}
	s.ServeConn(api.NewWebsocket(ws, s.maxPayload))
}

// ServeConn serves the sessions of one connection until it ends or the
// server shuts down, then closes it and releases its sessions. Use it for
// transports other than the websocket of Handler (e.g. a libp2p stream
// wrapped with api.NewStream).
func (s *Server) ServeConn(fc api.FrameConn) {
	c := newConn(s, fc)
	s.mu.Lock()
	if s.closedLocked {
		s.mu.Unlock()
		c.sendNow(wire.NewError("", wire.CodeShuttingDown, errDraining))
		fc.Close()
		return
	}
	s.connsLocked[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.connsLocked, c)
		s.mu.Unlock()
		s.conns.Done()
	}()
	c.serve()
}

// Serve serves Handler on ln and sets the advertised endpoint from ln's
// address. When ctx ends it shuts down gracefully (see Shutdown) and
// returns nil; it returns the listener's error if serving fails first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	s.endpointsLocked = []string{"ws://" + ln.Addr().String() + api.InferencePath}
	s.mu.Unlock()
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		s.Shutdown(context.Background())
		return fmt.Errorf("server: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.Shutdown(context.Background())
	// The websockets are closed; stop the listener and idle HTTP connections.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// Shutdown stops the server gracefully: it stops admitting (queued and new
// Opens get wire.CodeShuttingDown, /v1/info shows state "draining"), lets
// open sessions run until they close or Config.DrainTimeout passes (or ctx
// ends), then sends each remaining session an Error frame with
// CodeShuttingDown so that its client fails over, and closes every
// connection. It returns once all connections are closed. It is idempotent.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	first := !s.isDraining()
	if first {
		close(s.draining)
	}
	s.mu.Unlock()
	if first {
		s.log.Info("shutting down: not admitting new sessions", "open_sessions", len(s.adm.Snapshot().Open), "drain_timeout", s.cfg.DrainTimeout)
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	err := s.adm.Drain(dctx)
	cancel()
	s.mu.Lock()
	s.closedLocked = true
	conns := make([]*conn, 0, len(s.connsLocked))
	for c := range s.connsLocked {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("drain timeout: telling the remaining sessions to fail over", "open_sessions", len(s.adm.Snapshot().Open))
	}
	for _, c := range conns {
		c.abort(fmt.Errorf("%w: the drain timeout of %v passed", errDraining, s.cfg.DrainTimeout))
	}
	s.conns.Wait()
}

// Close releases the engine's weights. Call it after Serve returned (or
// Shutdown); sessions still running fail. Later calls do nothing and
// return nil.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closedLocked = true
	released := s.releasedLocked
	s.releasedLocked = true
	s.mu.Unlock()
	if released {
		return nil
	}
	s.steps.Close()
	return s.engine.Close()
}

// wait blocks for d (the emulated latency) or until ctx ends, and reports
// whether the full delay passed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
