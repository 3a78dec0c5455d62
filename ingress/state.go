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
	// Models are the served models, in the order configured.
	Models []ModelState `json:"models"`
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
	// ID is its node id; Provider who runs it.
	ID       string `json:"id,omitempty"`
	Provider string `json:"provider,omitempty"`
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
	// RTT is the ingress's round trip to it, seconds.
	RTT float64 `json:"rtt"`
}

// State probes (or reuses the recent probe of) every model's candidates and
// summarizes them.
func (g *Gateway) State(ctx context.Context) State {
	var st State
	for _, m := range g.cfg.Models {
		info := m.Head.Info()
		ms := ModelState{Name: m.Name, Blocks: info.NBlocks, Coverage: make([]int, info.NBlocks), Servers: []ServerState{}}
		for _, c := range g.Candidates(ctx, m, false) {
			ss := ServerState{
				Endpoint: c.Endpoint.Inference, ID: c.Info.ID, Provider: c.Info.Provider, Span: c.Info.Span,
				FullRange: c.Info.FullRange, State: c.Info.State, Tau: c.Info.Tau, Sessions: len(c.Info.Sessions),
				CacheBytesFree: c.Info.CacheBytesFree, RTT: c.RTT.Seconds(),
			}
			if c.Info.FullRange {
				ss.Span = info.Blocks()
			}
			if c.Err != nil {
				ss.Error = c.Err.Error()
				if ss.State == "" {
					ss.State = "unreachable"
				}
			}
			if n := ss.Span.Len(); c.Info.Tau > 0 && n > 0 {
				ss.Throughput = 1 / (c.Info.Tau * float64(n))
			}
			if c.Usable() {
				if c.Info.FullRange {
					ms.Replicas++
				}
				for b := max(ss.Span.Start, 0); b < min(ss.Span.End, info.NBlocks); b++ {
					ms.Coverage[b]++
				}
			}
			ms.Servers = append(ms.Servers, ss)
		}
		for b := 0; b < info.NBlocks; {
			if ms.Coverage[b] > 0 {
				b++
				continue
			}
			e := b
			for e < info.NBlocks && ms.Coverage[e] == 0 {
				e++
			}
			ms.Uncovered = append(ms.Uncovered, swarm.Span{Start: b, End: e}.String())
			b = e
		}
		ms.Health = "ok"
		if len(ms.Uncovered) > 0 {
			ms.Health = "unavailable"
		}
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
