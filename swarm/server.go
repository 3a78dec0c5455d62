package swarm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProtocolVersion is the version of the session wire protocol and of the
// ServerInfo schema that this build speaks.
const ProtocolVersion = 1

// LifecycleState is a server's state in the registry. The CRDT order is
// JOIN < SERVING < DOWN < LEFT (OpenTela, paper 000 Sec. 3.3): on merge the
// higher state wins. StateSuspected is a local view only (a node that has gone
// silent but may still refute it); it is never written into the CRDT.
type LifecycleState uint8

// Lifecycle states; the numeric order is the CRDT merge order.
const (
	StateUnknown LifecycleState = iota
	StateJoin
	StateServing
	StateDown
	StateLeft
	// StateSuspected ranks above LEFT only numerically; it is a local overlay.
	StateSuspected
)

var stateNames = map[LifecycleState]string{
	StateJoin:      "JOIN",
	StateServing:   "SERVING",
	StateDown:      "DOWN",
	StateLeft:      "LEFT",
	StateSuspected: "SUSPECTED",
}

// String returns the upper-case name used in JSON and tables.
func (s LifecycleState) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("STATE(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s LifecycleState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *LifecycleState) UnmarshalText(b []byte) error {
	for k, v := range stateNames {
		if strings.EqualFold(v, string(b)) {
			*s = k
			return nil
		}
	}
	return fmt.Errorf("swarm: unknown lifecycle state %q (want JOIN, SERVING, SUSPECTED, DOWN or LEFT)", b)
}

// PrefillFit is a linear fit of the prefill time per block as a function of
// the input length l: tauI(l) = Intercept + Slope*l (paper 003 Sec. 2.2, and
// its simulator's tauI(lI) = 0.0743*lI + 32.99 ms for an A100).
type PrefillFit struct {
	// Intercept is in seconds per block.
	Intercept float64 `json:"intercept"`
	// Slope is in seconds per block per input token.
	Slope float64 `json:"slope"`
}

// At returns tauI(l) in seconds per block for an input of l tokens.
func (f PrefillFit) At(l int) float64 { return f.Intercept + f.Slope*float64(l) }

// BatchTau is the measured decode time per block of one batch of decode
// steps: a server that batches the steps of its sessions into one pass over
// its weights computes Batch single-token steps (of Batch different
// sessions) through m blocks in about m*Tau seconds, for all of them
// together. Decode is memory-bound, so Tau grows much slower than Batch.
type BatchTau struct {
	// Batch is the number of sessions' single-token steps in the batch, >= 1.
	Batch int `json:"batch"`
	// Tau is the time per block for the whole batch, seconds.
	Tau float64 `json:"tau"`
}

// BatchFactor returns TauBatch(b) / TauBatch(1) for the measured curve
// batch (sorted by Batch, as ServerInfo.TauBatch): how many times longer
// one decode step of a batch of b sessions takes than a step of one
// session alone, so that a server's per-block time per token with b
// sessions decoding together is Tau * BatchFactor(batch, b). Between
// measured sizes it interpolates linearly, past the largest it extrapolates
// the last two points' slope (never below the largest measured value). It
// is 1 for b <= 1, for a curve without a batch of 1, and for an empty
// curve (a server that does not batch is priced at Tau per session, as
// before: its steps do not share a pass).
func BatchFactor(batch []BatchTau, b int) float64 {
	if b <= 1 || len(batch) == 0 || batch[0].Batch != 1 || batch[0].Tau <= 0 {
		return 1
	}
	one := batch[0].Tau
	for i := 1; i < len(batch); i++ {
		lo, hi := batch[i-1], batch[i]
		if b <= hi.Batch {
			f := float64(b-lo.Batch) / float64(hi.Batch-lo.Batch)
			return (lo.Tau + f*(hi.Tau-lo.Tau)) / one
		}
	}
	last := batch[len(batch)-1]
	if len(batch) == 1 {
		return last.Tau / one
	}
	prev := batch[len(batch)-2]
	slope := max(0, (last.Tau-prev.Tau)/float64(last.Batch-prev.Batch))
	return (last.Tau + slope*float64(b-last.Batch)) / one
}

// SessionLoad is one open session as a server advertises it: the inputs of
// the waiting time t^W of paper 003 eq. (20).
type SessionLoad struct {
	// Remaining is the estimated time until the session ends, in seconds.
	Remaining float64 `json:"remaining"`
	// Caches is the number of block attention caches it holds on this server
	// (k_j^r in the paper, the blocks it processes here).
	Caches int `json:"caches"`
}

// ServerInfo is what a server advertises about itself (in GET /v1/info and in
// the registry).
type ServerInfo struct {
	// ID is the server's node id (a libp2p peer id once the registry exists;
	// its URL before).
	ID string `json:"id"`
	// Model is ModelInfo.Name of the model served.
	Model string `json:"model"`
	// Span is the blocks hosted; [0, L) for a full-range server.
	Span Span `json:"span"`
	// ModelBlocks is L, the number of blocks of the whole model (so that
	// registry readers can tell which blocks nobody serves); 0 if unknown.
	ModelBlocks int `json:"model_blocks,omitempty"`
	// FullRange is true for a whole-model replica (e.g. vLLM) that takes text,
	// not hidden states.
	FullRange bool `json:"full_range,omitempty"`
	// Tau is the measured decode time per block per token tau_j, in seconds.
	Tau float64 `json:"tau"`
	// TauI is the measured prefill time per block, fit linearly in the input length.
	TauI PrefillFit `json:"tau_i"`
	// TauBatch is the measured decode time per block as a function of the
	// batch size (seconds per block for a whole batch of single-token steps
	// of that many sessions), sorted by Batch, for batches of 1, 2, 4, ...
	// sessions. Empty when the server does not batch or did not measure it
	// (older servers; full-range servers). Admission and routing do not use
	// it yet: with it, a router can price the extra session on a busy server
	// at TauBatch(b+1)-TauBatch(b) rather than Tau.
	TauBatch []BatchTau `json:"tau_batch,omitempty"`
	// MemoryBytes is M_j, the bytes available for blocks and attention caches.
	MemoryBytes int64 `json:"memory_bytes"`
	// CacheBytesCapacity is the attention-cache memory in bytes: M_j minus the
	// weights of the span, s_m * m_j (paper 003, eq. 2).
	CacheBytesCapacity int64 `json:"cache_bytes_capacity,omitempty"`
	// CacheBytesPerToken is the attention-cache bytes one block of this
	// server needs per token of one session (its own cache dtype), so that
	// s_c = CacheBytesPerToken * (lI_max + l_max) (paper 003, eq. 2); 0 if
	// not advertised. With CacheBytesCapacity it gives the cache slots a
	// router counts (eq. 20) without trusting the client's copy of the model.
	CacheBytesPerToken int64 `json:"cache_bytes_per_token,omitempty"`
	// Device is the engine backend computing the blocks (`swarm serve
	// --device`: "cpu"; the GPU issue adds "cuda"), and CacheDType the
	// element type of its attention caches, which CacheBytesPerToken
	// counts. Empty from full-range and older servers.
	Device     string `json:"device,omitempty"`
	CacheDType DType  `json:"cache_dtype,omitempty"`
	// WeightDType is the storage dtype of this server's block weights
	// (ModelInfo.DType of its file): servers of one model (one --model-name)
	// may hold different conversions of it (f16, q8_0, ...). Invalid (omitted)
	// from full-range and older servers.
	WeightDType DType `json:"weight_dtype,omitempty"`
	// Kernels names a block server's compute kernels: for the CPU engine
	// the kernel set chosen from the CPU's features ("go", "avx2+q32i8+f16x8",
	// "avx2+avx512", "avx2+avx512+vnni"; "avx2" from servers before f16x8,
	// "avx2+f16x8" from those before Q8_0's AVX2 8-bit kernels),
	// for a GPU its compute capability, matrix products and NVRTC version
	// ("cuda sm_90 mma nvrtc 12.4"; the blocks/cuda Backend.Kernels).
	// Engines with other kernels give a token the same result up to its
	// last bits, so a session's failover replay is bit for bit only between
	// servers whose Kernels (and CacheDType) are equal. Empty from
	// full-range and older servers.
	Kernels string `json:"kernels,omitempty"`
	// SlidingWindow and SlidingPattern are the model's sliding-window
	// attention as this server computes it (ModelInfo fields of the same
	// names): its sliding-window blocks hold only
	// ModelInfo.CacheTokens(b, maxLength) positions of cache, so a router
	// counts a session's bytes per block (routing.FromServerInfo; paper 003
	// eq. 2 with s_c per block). 0 for a model without sliding windows, and
	// from older servers, whose every block then counts as full.
	SlidingWindow  int `json:"sliding_window,omitempty"`
	SlidingPattern int `json:"sliding_pattern,omitempty"`
	// CacheBytesFree is the attention-cache memory not held by open sessions.
	CacheBytesFree int64 `json:"cache_bytes_free"`
	// Sessions lists the open sessions' load (paper 003 eq. 20).
	Sessions []SessionLoad `json:"sessions"`
	// Provider names who runs the server (for trusted-provider allowlists).
	Provider string `json:"provider,omitempty"`
	// PublicName is a human name the operator gave the server (`swarm
	// serve --public-name`), shown by `swarm status`; empty: none.
	PublicName string `json:"public_name,omitempty"`
	// Endpoints are the addresses clients reach it at (ws://..., multiaddrs).
	Endpoints []string `json:"endpoints,omitempty"`
	// Reachability is the node's verdict on how others reach it (a
	// p2p.Reachability value: "direct", "relayed", "unreachable"; from
	// libp2p's AutoNAT and the node's relay reservations); empty when
	// unknown or from older servers.
	Reachability string `json:"reachability,omitempty"`
	// ProtocolVersion is the wire protocol version the server speaks.
	ProtocolVersion int `json:"protocol_version"`
	// PlacementSessions and PlacementMaxLength are the R and l^I_max +
	// l_max (tokens) the server was placed with (`swarm serve --blocks auto
	// --target-sessions --max-length`), which every server of a model
	// shares, so that a replanner or `swarm status --fleet` can size s_c
	// and the slots as the servers did; 0 for a fixed span.
	PlacementSessions  int `json:"placement_sessions,omitempty"`
	PlacementMaxLength int `json:"placement_max_length,omitempty"`
	// ClientRTT is t*_j = max_c t_cj of paper 003 eq. (14): the largest
	// per-token round trip time, in seconds, the server measured to the
	// client and ingress nodes it knows (or to its bootstrap peers when it
	// knows none). Placement uses it in the amortized time per block
	// t~_j = tau_j + t*_j / m_j. 0 when unmeasured.
	ClientRTT float64 `json:"client_rtt,omitempty"`
	// Tentative is true while a joining server (state JOIN) announces the
	// span it would take but has not settled on it yet: `swarm serve
	// --blocks auto` announces its tentative span, waits a settle interval
	// for concurrent joiners, re-runs placement and then announces the
	// final span (Tentative false) before loading it. Always false for a
	// fixed span.
	Tentative bool `json:"tentative,omitempty"`
	// MovingTo and Draining show a live span move (replanning, issue 15;
	// node.RunServer's Mover). Routing and placement read only Span and
	// the state, so a moving server never gets new sessions on a span it
	// is leaving:
	//
	//  - SERVING with MovingTo: the server still serves Span and is loading
	//    MovingTo beside it (its memory holds both). The announced intent
	//    that other servers read before moving the same blocks.
	//  - SERVING with Draining: make-before-break done; the server serves
	//    Span (its new span) to new sessions and still computes Draining
	//    (the old one) for the sessions opened there before the move, until
	//    they end or the drain timeout sends them to fail over.
	//  - JOIN with Draining: memory cannot hold both spans, so the server
	//    drains first: it admits nothing, finishes the sessions open on
	//    Draining, then loads Span and announces SERVING. JOIN without
	//    Draining (and not Tentative): it is loading Span.
	//
	// Clients keep sessions already open on a server whose entry shows
	// Draining (node.Candidates.Health). Both are empty when not moving.
	MovingTo Span `json:"moving_to,omitzero"`
	Draining Span `json:"draining,omitzero"`
	// Version is the build of swarm the server runs (Version of its
	// binary, e.g. "v0.3.0-12-gabc1234"; "dev" for an unstamped build).
	// Empty from older servers.
	Version string `json:"version,omitempty"`
	// StartedAt is when the server started serving its first span, Unix
	// seconds (its uptime is now - StartedAt); 0 from older servers.
	StartedAt int64 `json:"started_at,omitempty"`
	// TokensServed counts the token positions the server has computed
	// through its current span since it loaded it (prefill and decode,
	// every session); 0 from older servers.
	TokensServed int64 `json:"tokens_served,omitempty"`
}

// CacheBytes returns the attention-cache bytes this server needs for one
// session of maxLength tokens over the blocks of span (inside its Span),
// from what it advertises: sum over b of CacheBytesPerToken *
// CacheTokens(b, maxLength) (ModelInfo.SpanCacheBytes). 0 when it
// advertises no CacheBytesPerToken.
func (s ServerInfo) CacheBytes(span Span, maxLength int) int64 {
	m := ModelInfo{CacheBytesPerToken: s.CacheBytesPerToken, SlidingWindow: s.SlidingWindow, SlidingPattern: s.SlidingPattern}
	return m.SpanCacheBytes(span, maxLength)
}

// String is a short human-readable description, for logs.
func (s ServerInfo) String() string {
	b, _ := json.Marshal(struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Span  string `json:"span"`
	}{s.ID, s.Model, s.Span.String()})
	return string(b)
}
