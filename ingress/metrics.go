package ingress

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus collectors of a Gateway (GET /metrics).
type metrics struct {
	requests    *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	ttft        *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	tpot        *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	retries     *prometheus.CounterVec
	probes      *prometheus.CounterVec
	routes      *prometheus.CounterVec
	inflight    *prometheus.GaugeVec
	keyRequests *prometheus.CounterVec
	keyTokens   *prometheus.CounterVec
	rateLimited prometheus.Counter
}

// latencyBuckets span 1 ms to ~65 s, in seconds.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_requests_total",
			Help: "Generation requests by model, API (completions, chat, petals), route kind (chain, replica, none) and outcome (ok or the error code).",
		}, []string{"model", "api", "route", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_tokens_total",
			Help: "Tokens by model and kind (prompt, completion).",
		}, []string{"model", "kind"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "swarm_ingress_ttft_seconds",
			Help:    "Time to first token in seconds, from the request's arrival at the gateway (routing included), by model and route kind.",
			Buckets: latencyBuckets,
		}, []string{"model", "route"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "swarm_ingress_request_seconds",
			Help:    "Duration of generation requests in seconds, from arrival at the gateway to the last token, by model and route kind.",
			Buckets: latencyBuckets,
		}, []string{"model", "route"}),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "swarm_ingress_tpot_seconds",
			Help:    "Mean time per output token after the first, in seconds, one observation per request, by model and route kind.",
			Buckets: latencyBuckets,
		}, []string{"model", "route"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_errors_total",
			Help: "Errors answered, by API and code (the HTTP status for the OpenAI API, the error kind for the websocket API).",
		}, []string{"api", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_retries_total",
			Help: "Requests re-routed after a server failed, by model.",
		}, []string{"model"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_probe_rounds_total",
			Help: "Rounds of probing every candidate server's info document (the source's Candidates), by model.",
		}, []string{"model"}),
		routes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_routings_total",
			Help: "Route computations (WS-RR runs) for sessions opened through the ingress, by the ingress and by its clients' failovers, by model.",
		}, []string{"model"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "swarm_ingress_inflight_requests",
			Help: "Generation requests in progress, by model.",
		}, []string{"model"}),
		keyRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_key_requests_total",
			Help: "Generation requests per API key name (anonymous without --api-keys).",
		}, []string{"key"}),
		keyTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarm_ingress_key_tokens_total",
			Help: "Tokens per API key name and kind (prompt, completion).",
		}, []string{"key", "kind"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarm_ingress_rate_limited_total",
			Help: "Requests refused (429) for being over their API key's or address's rate limit.",
		}),
	}
	reg.MustRegister(m.requests, m.tokens, m.ttft, m.duration, m.tpot, m.errors, m.retries, m.probes, m.routes, m.inflight, m.keyRequests, m.keyTokens,
		m.rateLimited)
	return m
}
