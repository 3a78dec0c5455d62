package node

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/dashboard"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/planner"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// planReadTimeout bounds reading the committed plan for GET /api/v1/state.
const planReadTimeout = time.Second

// RegistryState is the GET /api/v1/state document of a block server: every
// model its registry replica knows (by name), with each server that is not
// LEFT (ID its peer id, Endpoint its first advertised endpoint, State the
// lifecycle state in lower case, HeartbeatAge now - its last write in
// seconds). Coverage and headroom count the SERVING block servers and
// replicas (ModelState.Summarize). Models are sorted by name, servers by
// span start then id.
func RegistryState(entries []registry.Entry, now time.Time) ingress.State {
	byModel := map[string]*ingress.ModelState{}
	usable := map[string][]bool{}
	for _, e := range entries {
		if e.State == swarm.StateLeft || e.Info.Model == "" {
			continue
		}
		ms, ok := byModel[e.Info.Model]
		if !ok {
			ms = &ingress.ModelState{Name: e.Info.Model, Servers: []ingress.ServerState{}}
			byModel[e.Info.Model] = ms
		}
		ms.Blocks = max(ms.Blocks, e.Info.ModelBlocks)
		endpoint := ""
		if len(e.Info.Endpoints) > 0 {
			endpoint = e.Info.Endpoints[0]
		}
		info := e.Info
		info.ID = e.NodeID
		ss := ingress.NewServerState(endpoint, info, strings.ToLower(e.State.String()), e.Info.ModelBlocks, nil)
		ss.HeartbeatAge = now.Sub(e.Heartbeat).Seconds()
		ms.Servers = append(ms.Servers, ss)
		usable[e.Info.Model] = append(usable[e.Info.Model], e.Routable())
	}
	st := ingress.State{Models: []ingress.ModelState{}}
	for name, ms := range byModel {
		idx := make([]int, len(ms.Servers))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			sa, sb := ms.Servers[a], ms.Servers[b]
			return cmp.Or(cmp.Compare(sa.Span.Start, sb.Span.Start), strings.Compare(sa.ID, sb.ID))
		})
		servers, ok := make([]ingress.ServerState, len(idx)), make([]bool, len(idx))
		for i, j := range idx {
			servers[i], ok[i] = ms.Servers[j], usable[name][j]
		}
		ms.Servers = servers
		ms.Summarize(ok)
		st.Models = append(st.Models, *ms)
	}
	slices.SortFunc(st.Models, func(a, b ingress.ModelState) int { return strings.Compare(a.Name, b.Name) })
	return st
}

// NewPlanState is the dashboard's view of a committed plan.
func NewPlanState(p planner.Plan) *ingress.PlanState {
	ps := &ingress.PlanState{Epoch: p.Epoch, Status: fmt.Sprint(p.Status), AbortReason: p.AbortReason, Moves: []ingress.PlanMove{}}
	for _, m := range p.Moves {
		progress := "waiting"
		if pr, ok := p.Progress[m.Server]; ok {
			progress = fmt.Sprintf("move %d %s", pr.Move, pr.State)
		}
		ps.Moves = append(ps.Moves, ingress.PlanMove{Server: m.Server, Step: m.Step, From: m.From, To: m.To, Progress: progress})
	}
	return ps
}

// pages are a block server's own HTTP pages beside its span server's
// /v1/info and /v1/inference: the dashboard (GET /), GET /api/v1/state and
// GET /metrics.
type pages struct {
	j       *joiner
	f       *front
	started time.Time
	mux     *http.ServeMux
	// plans is the PlanSource of the planner group once the server
	// follows one (a planSource box; nil before).
	plans atomic.Pointer[planSource]
}

// planSource boxes a PlanSource for an atomic pointer.
type planSource struct{ PlanSource }

// newPages returns the pages of joiner j's server behind f, with the
// metrics of gatherer.
func newPages(j *joiner, f *front, gatherer prometheus.Gatherer) *pages {
	p := &pages{j: j, f: f, started: time.Now(), mux: http.NewServeMux()}
	dashboard.Mount(p.mux)
	p.mux.HandleFunc("GET "+dashboard.StatePath, p.serveState)
	p.mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return p
}

// owns reports whether path is one of the pages (the rest goes to the
// span server).
func (p *pages) owns(path string) bool {
	return dashboard.IsPage(path) || path == dashboard.StatePath || path == "/metrics"
}

// State is the server's GET /api/v1/state: RegistryState of its registry
// replica, its own row refreshed from the live span server (sessions, free
// cache, tokens served), Node (role "server"), and the committed plan when
// it follows a planner group.
func (p *pages) State(ctx context.Context) ingress.State {
	now := time.Now()
	st := RegistryState(p.j.reg.Snapshot(), now)
	self := p.j.reg.ID()
	st.Node = &ingress.NodeState{ID: self, Role: "server", Version: swarm.Version, StartedAt: p.started.Unix(), Now: now.Unix()}
	if t := p.f.cur.Load(); t != nil {
		live := t.srv.Info()
		for i := range st.Models {
			for k, ss := range st.Models[i].Servers {
				if ss.ID == self {
					ss.Sessions, ss.CacheBytesFree, ss.TokensServed = len(live.Sessions), live.CacheBytesFree, live.TokensServed
					st.Models[i].Servers[k] = ss
				}
			}
		}
	}
	if src := p.plans.Load(); src != nil {
		cctx, cancel := context.WithTimeout(ctx, planReadTimeout)
		plan, err := src.Current(cctx)
		cancel()
		if err == nil {
			st.Plan = NewPlanState(plan)
		} else {
			p.j.log.Debug("reading the plan for the state", "err", err)
		}
	}
	return st
}

func (p *pages) serveState(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(p.State(r.Context()))
}

// nodeMetrics is the metrics registry of a server node: the Go runtime's
// and the process's collectors.
func nodeMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// StandalonePages are the dashboard, GET /api/v1/state and GET /metrics of
// a server that runs outside the swarm (`swarm serve --blocks` without
// libp2p flags; mount with srv.SetFallback): the state has the one server,
// as its /v1/info describes it, and no peer id. srv reports into the
// metrics (server.NewMetrics), with the Go and process collectors.
func StandalonePages(srv *server.Server) (http.Handler, error) {
	reg := nodeMetrics()
	m, err := server.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	srv.SetMetrics(m)
	started := time.Now()
	mux := http.NewServeMux()
	dashboard.Mount(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+dashboard.StatePath, func(w http.ResponseWriter, _ *http.Request) {
		info := srv.Info()
		endpoint := ""
		if len(info.Endpoints) > 0 {
			endpoint = info.Endpoints[0]
		}
		ms := ingress.ModelState{Name: info.Model, Blocks: info.ModelBlocks,
			Servers: []ingress.ServerState{ingress.NewServerState(endpoint, info.ServerInfo, info.State, info.ModelBlocks, nil)}}
		ms.Summarize([]bool{info.State == api.StateServing})
		now := time.Now()
		st := ingress.State{Node: &ingress.NodeState{Role: "server", Version: swarm.Version, StartedAt: started.Unix(), Now: now.Unix()},
			Models: []ingress.ModelState{ms}}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	return mux, nil
}
