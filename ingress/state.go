package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/swarmllm/swarm/swarm"
)

// State is the read-only document of GET /api/v1/state: the ingress's view
// of each model's servers (OpenTela's read-only registry endpoints, paper
// 000 Sec. 3.2 "Unified ML Serving Protocol").
type State struct {
	// Node is the node that answers: its id, role, version and uptime.
	// Absent from older nodes.
	Node *NodeState `json:"node,omitempty"`
	// Models are the served models, in the order configured (a block
	// server: every model its registry replica knows, by name).
	Models []ModelState `json:"models"`
	// Ingress is the proxy's request counters; absent on block servers.
	Ingress *IngressStats `json:"ingress,omitempty"`
	// Plan is the planner group's committed plan, when the node follows
	// one (`swarm serve --planners`) and could read it.
	Plan *PlanState `json:"plan,omitempty"`
}

// NodeState is the node answering GET /api/v1/state.
type NodeState struct {
	// ID is its libp2p peer id; empty for a proxy without --bootstrap.
	ID string `json:"id,omitempty"`
	// Role is "proxy" or "server".
	Role string `json:"role"`
	// Version is its build (swarm.Version).
	Version string `json:"version"`
	// StartedAt is when it started, Unix seconds; Now its clock at the
	// answer, Unix seconds (uptimes and ages are Now - StartedAt).
	StartedAt int64 `json:"started_at"`
	Now       int64 `json:"now"`
}

// IngressStats are the ingress's counters since it started (cumulative:
// a dashboard derives rates from two readings).
type IngressStats struct {
	// Requests counts finished generation requests; Errors those that
	// failed, and ErrorsByCode by ErrorCode (bad_request, no_route, ...).
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	// Inflight is the generation requests in progress.
	Inflight int64 `json:"inflight"`
	// PromptTokens and CompletionTokens count the tokens of the finished
	// requests.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// LatencySeconds is the sum of the finished requests' durations
	// (arrival to last token), LatencyCount their number; TTFTSeconds and
	// TTFTCount the same for the time to first token.
	LatencySeconds float64 `json:"latency_seconds"`
	LatencyCount   int64   `json:"latency_count"`
	TTFTSeconds    float64 `json:"ttft_seconds"`
	TTFTCount      int64   `json:"ttft_count"`
}

// PlanState is a committed plan (planner.Plan) as the dashboard shows it.
type PlanState struct {
	// Epoch numbers the plan (0: none committed yet); Status is its
	// lifecycle state (planner.Status).
	Epoch  uint64 `json:"epoch"`
	Status string `json:"status"`
	// Moves are its span changes, in execution order.
	Moves []PlanMove `json:"moves"`
	// AbortReason says why an aborted plan stopped.
	AbortReason string `json:"abort_reason,omitempty"`
}

// PlanMove is one span change of a plan and the server's last report.
type PlanMove struct {
	Server string     `json:"server"`
	Step   int        `json:"step"`
	From   swarm.Span `json:"from"`
	To     swarm.Span `json:"to"`
	// Progress is the server's last report ("waiting" before it reports).
	Progress string `json:"progress"`
}

// ModelState is one model's coverage and servers.
type ModelState struct {
	// Name is the model id.
	Name string `json:"name"`
	// Blocks is L.
	Blocks int `json:"blocks"`
	// Coverage[b] is the number of usable servers hosting block b
	// (replicas count for every block).
	Coverage []int `json:"coverage"`
	// Headroom[b] is the fraction of the attention-cache memory free on
	// the usable servers hosting block b, summed over them (free bytes /
	// capacity bytes, in [0, 1]; 0 when none advertises a capacity).
	Headroom []float64 `json:"headroom"`
	// Replicas is the number of usable full-range replicas.
	Replicas int `json:"replicas"`
	// Health is "ok" when every block is hosted by a usable server (a
	// request can be routed), "unavailable" otherwise.
	Health string `json:"health"`
	// Uncovered lists the blocks no usable server hosts, "START:END".
	Uncovered []string `json:"uncovered,omitempty"`
	// Servers are the candidates as last probed.
	Servers []ServerState `json:"servers"`
}

// ServerState is one server as the ingress sees it.
type ServerState struct {
	// Endpoint is where the ingress reaches it.
	Endpoint string `json:"endpoint"`
	// ID is its node id; Provider who runs it; PublicName the name its
	// operator gave it (--public-name).
	ID         string `json:"id,omitempty"`
	Provider   string `json:"provider,omitempty"`
	PublicName string `json:"public_name,omitempty"`
	// Reachability is its own verdict on how peers reach it: "direct",
	// "relayed" or "unreachable" (empty from older servers).
	Reachability string `json:"reachability,omitempty"`
	// Span is the blocks hosted ([0, L) for a replica); FullRange marks a
	// replica.
	Span      swarm.Span `json:"span"`
	FullRange bool       `json:"full_range,omitempty"`
	// State is "serving", "draining" or "unreachable".
	State string `json:"state"`
	// Error says why it is unusable.
	Error string `json:"error,omitempty"`
	// Tau is tau_j, seconds per block per token.
	Tau float64 `json:"tau"`
	// Throughput is the decode speed of one session through the whole
	// span, tokens per second: 1 / (tau_j * m_j).
	Throughput float64 `json:"throughput"`
	// Sessions is the number of open sessions (its load).
	Sessions int `json:"sessions"`
	// CacheBytesFree is the attention-cache memory not held by sessions.
	CacheBytesFree int64 `json:"cache_bytes_free"`
	// RTT is the ingress's round trip to it, seconds (0 on a block
	// server's view, which reads the registry).
	RTT float64 `json:"rtt"`
	// CacheBytesCapacity is its attention-cache memory (0: not advertised).
	CacheBytesCapacity int64 `json:"cache_bytes_capacity,omitempty"`
	// Device is its engine backend ("cpu", ...).
	Device string `json:"device,omitempty"`
	// Version, StartedAt (Unix seconds) and TokensServed as it advertises
	// them (swarm.ServerInfo); empty or 0 from older servers.
	Version      string `json:"version,omitempty"`
	StartedAt    int64  `json:"started_at,omitempty"`
	TokensServed int64  `json:"tokens_served,omitempty"`
	// MovingTo and Draining show a span move in progress.
	MovingTo swarm.Span `json:"moving_to,omitzero"`
	Draining swarm.Span `json:"draining,omitzero"`
	// HeartbeatAge is the age of its registry entry, seconds (a block
	// server's view only).
	HeartbeatAge float64 `json:"heartbeat_age,omitempty"`
}

// NewServerState is the state of a server that info describes, in
// lifecycle state ("serving", "draining", ...), seen at endpoint; err,
// when not nil, says why it is unusable. nBlocks is the model's L (a
// replica's span).
func NewServerState(endpoint string, info swarm.ServerInfo, state string, nBlocks int, err error) ServerState {
	ss := ServerState{
		Endpoint: endpoint, ID: info.ID, Provider: info.Provider, PublicName: info.PublicName, Reachability: info.Reachability, Span: info.Span,
		FullRange: info.FullRange, State: state, Tau: info.Tau, Sessions: len(info.Sessions),
		CacheBytesFree: info.CacheBytesFree, CacheBytesCapacity: info.CacheBytesCapacity, Device: info.Device,
		Version: info.Version, StartedAt: info.StartedAt, TokensServed: info.TokensServed,
		MovingTo: info.MovingTo, Draining: info.Draining,
	}
	if info.FullRange {
		ss.Span = swarm.Span{Start: 0, End: nBlocks}
	}
	if err != nil {
		ss.Error = err.Error()
		if ss.State == "" {
			ss.State = "unreachable"
		}
	}
	if n := ss.Span.Len(); info.Tau > 0 && n > 0 {
		ss.Throughput = 1 / (info.Tau * float64(n))
	}
	return ss
}

// Summarize fills ms's Coverage, Headroom, Replicas, Uncovered and Health
// from ms.Blocks and the servers for which usable is true (parallel to
// ms.Servers).
func (ms *ModelState) Summarize(usable []bool) {
	ms.Coverage, ms.Headroom, ms.Replicas, ms.Uncovered = make([]int, ms.Blocks), make([]float64, ms.Blocks), 0, nil
	for i, ss := range ms.Servers {
		if !usable[i] {
			continue
		}
		if ss.FullRange {
			ms.Replicas++
		}
		free := 0.0
		if ss.CacheBytesCapacity > 0 {
			free = min(1, max(0, float64(ss.CacheBytesFree)/float64(ss.CacheBytesCapacity)))
		}
		for b := max(ss.Span.Start, 0); b < min(ss.Span.End, ms.Blocks); b++ {
			ms.Coverage[b]++
			ms.Headroom[b] += free
		}
	}
	for b := 0; b < ms.Blocks; {
		if ms.Coverage[b] > 0 {
			b++
			continue
		}
		e := b
		for e < ms.Blocks && ms.Coverage[e] == 0 {
			e++
		}
		ms.Uncovered = append(ms.Uncovered, swarm.Span{Start: b, End: e}.String())
		b = e
	}
	ms.Health = "ok"
	if len(ms.Uncovered) > 0 {
		ms.Health = "unavailable"
	}
}

// State probes (or reuses the recent probe of) every model's candidates and
// summarizes them, with the ingress's counters and Node (as SetNode gave
// it, Role "proxy").
func (g *Gateway) State(ctx context.Context) State {
	st := State{Node: g.nodeState(), Ingress: g.ingressStats()}
	for _, m := range g.cfg.Models {
		info := m.Head.Info()
		ms := ModelState{Name: m.Name, Blocks: info.NBlocks, Servers: []ServerState{}}
		var usable []bool
		for _, c := range g.Candidates(ctx, m, false) {
			ss := NewServerState(c.Endpoint.Inference, c.Info.ServerInfo, c.Info.State, info.NBlocks, c.Err)
			ss.RTT = c.RTT.Seconds()
			ms.Servers = append(ms.Servers, ss)
			usable = append(usable, c.Usable())
		}
		ms.Summarize(usable)
		st.Models = append(st.Models, ms)
	}
	return st
}

// StateHandler serves GET /api/v1/state as JSON.
func (g *Gateway) StateHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(g.State(r.Context()))
	})
}

// UsageHandler serves GET /api/v1/usage: the calling API key's usage as
// JSON, or an OpenAI-style error (401 invalid_api_key, 429
// rate_limit_exceeded with Retry-After).
func (g *Gateway) UsageHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acct, err := g.Authenticate(r)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			code := "invalid_api_key"
			if errors.Is(err, ErrRateLimited) {
				code = "rate_limit_exceeded"
			}
			w.WriteHeader(AuthStatus(err, w.Header()))
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error", "code": code, "param": nil}})
			return
		}
		_ = json.NewEncoder(w).Encode(g.Usage(acct))
	})
}
