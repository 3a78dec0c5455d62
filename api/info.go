package api

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/swarmllm/swarm/swarm"
)

// HTTP paths a server answers.
const (
	// InferencePath upgrades to a websocket that carries wire frames.
	InferencePath = "/v1/inference"
	// InfoPath answers GET with the Info document as JSON.
	InfoPath = "/v1/info"
)

// Server states in Info.State.
const (
	// StateServing: the server admits new sessions.
	StateServing = "serving"
	// StateDraining: the server is shutting down; it admits no new session
	// (Open gets wire.CodeShuttingDown) and lets open ones finish.
	StateDraining = "draining"
)

// ErrBadAddress is returned (wrapped) for a server address that is neither
// "host:port" nor a ws:// or wss:// URL.
var ErrBadAddress = errors.New("api: bad server address")

// Info is the JSON document of GET /v1/info (and of the /swarm/info/1
// stream), the one document every server answers, block server and
// full-range replica alike: what the server advertises (swarm.ServerInfo,
// whose fields appear at the top level; FullRange marks a replica), the
// whole model description so that a client can check it loaded the same
// model, the admission state, and for a replica its engine's model id.
type Info struct {
	swarm.ServerInfo
	// ModelInfo describes the model the span belongs to. Block servers
	// always send it; a replica sends it when it was given the model's
	// metadata, and nil means unknown.
	ModelInfo *swarm.ModelInfo `json:"model_info,omitempty"`
	// State is StateServing or StateDraining.
	State string `json:"state"`
	// MaxLength is the longest session, in tokens, the server accepts
	// (max_length of Open): the model's context. 0 if unknown.
	MaxLength int `json:"max_length"`
	// Measurement says how Tau and TauI were obtained (block servers).
	Measurement Measurement `json:"measurement"`
	// Admission is the memory model (2) bookkeeping of a block server:
	// memory, weights, cache bytes used and free, open sessions, queued
	// sessions with their estimated waits (paper 003 eq. 20). Zero for a
	// replica, whose engine admits requests itself.
	Admission Admission `json:"admission"`
	// NonFiniteSteps counts the steps a block server refused since it
	// started because their hidden states held NaN or Inf.
	NonFiniteSteps int64 `json:"non_finite_steps"`
	// BackendModel is a replica's engine's own model id (its first
	// /v1/models entry), the "model" its requests must name; empty for a
	// block server.
	BackendModel string `json:"backend_model,omitempty"`
	// Backend is a replica's engine URL, for operators (it may be
	// reachable only from the replica's host); empty for a block server.
	Backend string `json:"backend,omitempty"`
}

// Admission is a block server's admission state at one instant (the
// memory model (2) of paper 003 and the FIFO queue of eq. 20), as GET
// /v1/info shows it. Byte counts are bytes, times seconds.
type Admission struct {
	// MemoryBytes is M_j, the bytes for weights and attention caches.
	MemoryBytes int64 `json:"memory_bytes"`
	// WeightBytes is s_m*m_j, the span's weights.
	WeightBytes int64 `json:"weight_bytes"`
	// CacheBytesUsed is the attention-cache bytes held by open sessions.
	CacheBytesUsed int64 `json:"cache_bytes_used"`
	// CacheBytesReserved is attention-cache memory set aside for
	// something other than this server's sessions: during a live span move
	// (node.RunServer), the weights and caches of the other span loaded in
	// the same memory M_j. 0 when nothing is reserved.
	CacheBytesReserved int64 `json:"cache_bytes_reserved,omitempty"`
	// CacheBytesFree is M_j - s_m*m_j - CacheBytesUsed -
	// CacheBytesReserved (negative while a reservation overlaps sessions
	// admitted before it).
	CacheBytesFree int64 `json:"cache_bytes_free"`
	// MaxSessions is the cap on open sessions, 0 for none.
	MaxSessions int `json:"max_sessions"`
	// Closed is true once the server stopped admitting (draining).
	Closed bool `json:"closed"`
	// Open lists the open sessions by increasing Remaining (the order of
	// paper 003 eq. 20).
	Open []OpenSession `json:"open"`
	// Queue lists the waiting sessions in FIFO order.
	Queue []QueuedSession `json:"queue"`
}

// OpenSession is one admitted session in Admission.
type OpenSession struct {
	// SessionID is the id the client gave in its Open frame.
	SessionID string `json:"session_id"`
	// Span is the blocks processed for it; its caches are Span.Len().
	Span swarm.Span `json:"span"`
	// MaxLength is the tokens its caches are sized for.
	MaxLength int `json:"max_length"`
	// CacheBytes is the attention-cache bytes it holds.
	CacheBytes int64 `json:"cache_bytes"`
	// Remaining is its estimated remaining time, in seconds.
	Remaining float64 `json:"remaining"`
	// Age is the time since admission, in seconds.
	Age float64 `json:"age"`
}

// QueuedSession is one waiting session in Admission.
type QueuedSession struct {
	// SessionID is the id the client gave in its Open frame.
	SessionID string `json:"session_id"`
	// Position is the number of sessions ahead (0 = next).
	Position int `json:"position"`
	// Span is the blocks it asks to process.
	Span swarm.Span `json:"span"`
	// CacheBytes is the attention-cache bytes it needs.
	CacheBytes int64 `json:"cache_bytes"`
	// Waited is the time it has waited so far, in seconds.
	Waited float64 `json:"waited"`
	// EstimatedWait is the estimated time until admission, in seconds.
	EstimatedWait float64 `json:"estimated_wait"`
}

// Loads returns the open sessions as a server advertises them
// (swarm.ServerInfo.Sessions): remaining time and block caches held, the
// inputs of paper 003 eq. (20).
func (a Admission) Loads() []swarm.SessionLoad {
	loads := make([]swarm.SessionLoad, len(a.Open))
	for i, o := range a.Open {
		loads[i] = swarm.SessionLoad{Remaining: o.Remaining, Caches: o.Span.Len()}
	}
	return loads
}

// Measurement describes the server's start-up measurement of tau and tauI.
type Measurement struct {
	// DecodeSteps is how many single-token decode steps through the whole
	// span were timed; Tau is their median divided by the span length.
	DecodeSteps int `json:"decode_steps"`
	// DecodePositions are the positions of those steps (each with that
	// many earlier positions in the attention cache), spread over the
	// first 256 positions of a session.
	DecodePositions []int `json:"decode_positions"`
	// PrefillLengths are the input lengths l, in tokens, whose prefill time
	// per block was timed for the least-squares fit TauI(l).
	PrefillLengths []int `json:"prefill_lengths"`
	// PrefillSeconds[i] is the median prefill time per block, in seconds,
	// for an input of PrefillLengths[i] tokens.
	PrefillSeconds []float64 `json:"prefill_seconds"`
	// Hardware names the CPU and GOMAXPROCS the numbers hold for.
	Hardware string `json:"hardware"`
	// Cached is true when the numbers came from the measurement cache
	// instead of being measured at this start.
	Cached bool `json:"cached"`
	// MeasuredAt is when they were measured, RFC 3339.
	MeasuredAt string `json:"measured_at"`
}

// Endpoint is a server's addresses: the websocket URL of InferencePath and
// the http URL of InfoPath.
type Endpoint struct {
	// Inference is ws://HOST:PORT/v1/inference (or wss://).
	Inference string
	// Info is http://HOST:PORT/v1/info (or https://).
	Info string
}

// ParseEndpoint accepts "host:port", "ws://host:port", "wss://host:port"
// (with or without the /v1/inference path) and "http(s)://host:port", and
// returns the server's two URLs. It returns an error wrapping ErrBadAddress
// naming what is wrong.
func ParseEndpoint(addr string) (Endpoint, error) {
	s := strings.TrimSpace(addr)
	if s == "" {
		return Endpoint{}, fmt.Errorf("%w: empty address (want host:port or ws://host:port)", ErrBadAddress)
	}
	if !strings.Contains(s, "://") {
		s = "ws://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: %q: %w", ErrBadAddress, addr, err)
	}
	var httpScheme, wsScheme string
	switch u.Scheme {
	case "ws", "http":
		httpScheme, wsScheme = "http", "ws"
	case "wss", "https":
		httpScheme, wsScheme = "https", "wss"
	default:
		return Endpoint{}, fmt.Errorf("%w: %q: scheme %q, want ws, wss, http or https", ErrBadAddress, addr, u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return Endpoint{}, fmt.Errorf("%w: %q: want host:port (e.g. 127.0.0.1:7000)", ErrBadAddress, addr)
	}
	if p := strings.TrimSuffix(u.Path, "/"); p != "" && p != InferencePath {
		return Endpoint{}, fmt.Errorf("%w: %q: path %q, want none or %s", ErrBadAddress, addr, u.Path, InferencePath)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Endpoint{}, fmt.Errorf("%w: %q: want no user, query or fragment", ErrBadAddress, addr)
	}
	return Endpoint{
		Inference: wsScheme + "://" + u.Host + InferencePath,
		Info:      httpScheme + "://" + u.Host + InfoPath,
	}, nil
}

// ReplicaEndpoint returns the Endpoint of a full-range replica from the
// base of its OpenAI-compatible API, "http(s)://HOST:PORT" (what `swarm
// serve --full-range` prints): Inference is the base (text goes to
// BASE/v1/completions), Info is BASE/v1/info. Errors wrap ErrBadAddress.
func ReplicaEndpoint(base string) (Endpoint, error) {
	s := strings.TrimSuffix(strings.TrimSpace(base), "/")
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return Endpoint{}, fmt.Errorf("%w: replica %q: want http://HOST:PORT (the address `swarm serve --full-range` prints)", ErrBadAddress, base)
	}
	return Endpoint{Inference: s, Info: s + InfoPath}, nil
}
