package api

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/swarmllm/swarm/server/admission"
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

// Info is the JSON document of GET /v1/info: what the server advertises
// (swarm.ServerInfo, whose fields appear at the top level), the whole model
// description so that a client can check it loaded the same model, and the
// admission state (open sessions and the FIFO queue of waiting ones).
type Info struct {
	swarm.ServerInfo
	// ModelInfo describes the model the span belongs to.
	ModelInfo swarm.ModelInfo `json:"model_info"`
	// State is StateServing or StateDraining.
	State string `json:"state"`
	// MaxLength is the longest session, in tokens, the server accepts
	// (max_length of Open): the model's context.
	MaxLength int `json:"max_length"`
	// Measurement says how Tau and TauI were obtained.
	Measurement Measurement `json:"measurement"`
	// Admission is the memory model (2) bookkeeping: memory, weights,
	// cache bytes used and free, open sessions, queued sessions with their
	// estimated waits (paper 003 eq. 20).
	Admission admission.Snapshot `json:"admission"`
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
