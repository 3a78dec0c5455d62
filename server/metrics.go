package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/swarmllm/swarm/swarm/wire"
)

// Metrics are a block server's Prometheus collectors (GET /metrics on its
// node). One Metrics outlives the span servers of a node (a span move
// loads a new one): SetMetrics makes a server report into it, and its
// gauges read the server set last.
type Metrics struct {
	cur atomic.Pointer[Server] // the server whose gauges are read

	steps     prometheus.Histogram
	batch     prometheus.Histogram
	batchRows prometheus.Histogram
	tokens    prometheus.Counter
	opened    prometheus.Counter
	bytes     *prometheus.CounterVec
	errors    *prometheus.CounterVec
}

// stepBuckets span 0.1 ms to ~3.3 s, in seconds.
var stepBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)

// NewMetrics registers a block server's collectors with reg:
//
//   - swarm_server_sessions, swarm_server_step_queue,
//     swarm_server_cache_bytes_free: gauges of the current server (open
//     sessions, steps waiting for the step loop, attention-cache bytes not
//     held by sessions);
//   - swarm_server_step_seconds: one session step's time in the server,
//     from its arrival at the step loop to its answer (histogram, s);
//   - swarm_server_batch_seconds, swarm_server_batch_rows: the compute
//     time of one batch through the span and its token rows (histograms);
//   - swarm_server_tokens_total: token rows computed;
//   - swarm_server_sessions_opened_total: sessions granted;
//   - swarm_server_bytes_total{direction="in"|"out"}: wire frame bytes,
//     headers included;
//   - swarm_server_errors_total{code}: Error frames sent (counted as each
//     is written, before the write returns), by wire code
//     name (no_room, bad_span, ...).
//
// It returns reg's error (e.g. the names are already registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		steps: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "swarm_server_step_seconds",
			Help: "Time of one session step in the server, from its arrival at the step loop to its answer, in seconds.", Buckets: stepBuckets}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "swarm_server_batch_seconds",
			Help: "Compute time of one batch of steps through the span, in seconds.", Buckets: stepBuckets}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "swarm_server_batch_rows",
			Help: "Token rows of one batch of steps (its batch size).", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		tokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "swarm_server_tokens_total",
			Help: "Token rows computed through the span (prefill and decode)."}),
		opened: prometheus.NewCounter(prometheus.CounterOpts{Name: "swarm_server_sessions_opened_total",
			Help: "Sessions granted."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "swarm_server_bytes_total",
			Help: "Session protocol frame bytes, headers included, by direction (in, out)."}, []string{"direction"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "swarm_server_errors_total",
			Help: "Error frames sent to clients, by wire error code."}, []string{"code"}),
	}
	gauge := func(name, help string, read func(*Server) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if s := m.cur.Load(); s != nil {
				return read(s)
			}
			return 0
		})
	}
	for _, c := range []prometheus.Collector{
		m.steps, m.batch, m.batchRows, m.tokens, m.opened, m.bytes, m.errors,
		gauge("swarm_server_sessions", "Open sessions.", func(s *Server) float64 { return float64(len(s.adm.Snapshot().Loads())) }),
		gauge("swarm_server_step_queue", "Steps waiting for the step loop.", func(s *Server) float64 { return float64(s.steps.waiting.Load()) }),
		gauge("swarm_server_cache_bytes_free", "Attention-cache bytes not held by sessions.", func(s *Server) float64 { return float64(s.adm.Snapshot().CacheBytesFree) }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: registering the metrics: %w", err)
		}
	}
	return m, nil
}

// SetMetrics makes s report into m (nil: stop reporting) and m's gauges
// read s.
func (s *Server) SetMetrics(m *Metrics) {
	s.metrics.Store(m)
	if m != nil {
		m.cur.Store(s)
	}
}

// observeBatch records one batch of the step loop.
func (s *Server) observeBatch(rows int, d time.Duration) {
	if m := s.metrics.Load(); m != nil {
		m.batch.Observe(d.Seconds())
		m.batchRows.Observe(float64(rows))
		m.tokens.Add(float64(rows))
	}
}

// observeStep records one session step's time in the server.
func (s *Server) observeStep(d time.Duration) {
	if m := s.metrics.Load(); m != nil {
		m.steps.Observe(d.Seconds())
	}
}

// observeFrame records the bytes of a frame read ("in") or written
// ("out").
func (s *Server) observeFrame(direction string, f wire.Frame) {
	if m := s.metrics.Load(); m != nil {
		m.bytes.WithLabelValues(direction).Add(float64(wire.EncodedLen(f)))
	}
}

// observeSending records an Error frame's code or a Granted frame as the
// frame is about to be written: before the write, so that a client which
// has read the frame always finds it counted (after it, a gather could run
// between the client's read and the count).
func (s *Server) observeSending(f wire.Frame) {
	m := s.metrics.Load()
	if m == nil {
		return
	}
	switch f := f.(type) {
	case *wire.Error:
		m.errors.WithLabelValues(f.Code.String()).Inc()
	case *wire.Granted:
		m.opened.Inc()
	}
}
