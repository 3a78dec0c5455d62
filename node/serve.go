package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
	"github.com/swarmllm/swarm/swarm/wire"
)

// Timing of a server's announcements.
const (
	// loadPublishGap is the shortest time between two load
	// announcements: sessions opening and closing in a burst are
	// announced together.
	loadPublishGap = 100 * time.Millisecond
	// leaveTimeout bounds the LEFT announcement on shutdown.
	leaveTimeout = 5 * time.Second
	// minJoinWait is the least time a joiner waits for earlier joiners to
	// settle before it predicts their spans itself.
	minJoinWait = 10 * time.Second
)

// ProbeSpan is the span `swarm serve --blocks auto` measures tau and tauI
// on before placement has chosen its span: the first block.
var ProbeSpan = swarm.Span{Start: 0, End: 1}

// ServerConfig configures RunServer; each field maps to a flag of `swarm
// serve`.
type ServerConfig struct {
	// Server is the span server's configuration (--model, --memory,
	// --listen, --drain-timeout, ...). Server.Listen "" serves no
	// websocket, only the /swarm/inference/1 stream (--listen none). With
	// Auto, placement sets Server.Blocks, and Server.MemoryBytes, M_j in
	// bytes, must be > 0.
	Server server.Config
	// Auto chooses the span with incremental CG-BP (--blocks auto).
	Auto bool
	// Sessions is R (--target-sessions), MaxLength l^I_max + l_max in
	// tokens (--max-length; 0 is the model's context): see
	// PlacementParams.
	Sessions  int
	MaxLength int
	// JoinSettle is how long a joining server waits after announcing its
	// tentative span, so that servers joining at the same moment see each
	// other, before it settles on its span (--join-settle).
	JoinSettle time.Duration
	// Provider names who runs the server (--provider).
	Provider string
	// PublicName is a human name for this server shown in `swarm status`
	// and the dashboard (--public-name); empty: none.
	PublicName string
	// Announce is the websocket URL to advertise instead of the listener's
	// address (--announce ws://HOST:PORT, a ParseAnnounce result), for a
	// server listening on 0.0.0.0 or behind a port forward; empty: the
	// listener's address (AdvertiseURL).
	Announce string
	// LoadRefresh is the interval between re-announcements of the load
	// while sessions are open (their remaining times count down); 0
	// announces only when a session opens or closes.
	LoadRefresh time.Duration
	// OnMove, if not nil, is told the progress of each span move asked
	// of the Mover (started, switched, done, failed), from the goroutine
	// that called Move: the move waits while it runs.
	OnMove func(MoveEvent)
	// Bootstrap are the node's bootstrap peers: the registry is fetched
	// from them before placement, and they stand in for the client nodes
	// in the RTT measurement when none is found.
	Bootstrap []peer.AddrInfo
	// Planners are the node ids of the planner group (`swarm serve
	// --planners`): the server executes its moves of the committed plans
	// (ExecutePlans, moving with its Mover), and when its own id is listed
	// it also runs a replica of the group (ServePlans, ReplanLoop with
	// Replan). Empty: the server moves only by
	// decentralized rebalancing (Rebalance), if enabled.
	Planners []peer.ID
	// Replan configures the replanning of a replica run here.
	Replan ReplanConfig
	// Rebalance configures decentralized rebalancing (RebalanceLoop),
	// run only without Planners; a zero Interval disables it. Its Model,
	// Sessions and MaxLength default to the server's own.
	Rebalance RebalanceConfig
}

// Validate returns an error wrapping ErrBadConfig naming the first bad
// field (server.Config is checked by server.New).
func (c ServerConfig) Validate() error {
	switch {
	case c.Auto && c.Server.MemoryBytes <= 0:
		return fmt.Errorf("%w: --memory %d bytes, want > 0 with --blocks auto", ErrBadConfig, c.Server.MemoryBytes)
	case c.Sessions < 1:
		return fmt.Errorf("%w: --target-sessions %d, want >= 1", ErrBadConfig, c.Sessions)
	case c.MaxLength < 0:
		return fmt.Errorf("%w: --max-length %d, want >= 0 (0 = the model's context)", ErrBadConfig, c.MaxLength)
	case c.JoinSettle < 0:
		return fmt.Errorf("%w: --join-settle %v, want >= 0", ErrBadConfig, c.JoinSettle)
	case c.LoadRefresh < 0:
		return fmt.Errorf("%w: load refresh %v, want >= 0", ErrBadConfig, c.LoadRefresh)
	}
	return nil
}

// Serving is what RunServer reports once it serves.
type Serving struct {
	// ID is the server's peer id (its registry node id).
	ID string
	// Span is the blocks it hosts.
	Span swarm.Span
	// URL is its websocket inference URL; empty without websocket. A
	// make-before-break move gives the new span a URL of its own (the
	// registry entry advertises the current one).
	URL string
	// Addrs are its libp2p multiaddrs, each ending in /p2p/ID.
	Addrs []string
	// Mover moves the running server to another span (make-before-break
	// when its memory holds both spans, else drain first); valid until
	// RunServer returns. ServerConfig.OnMove reports its progress.
	Mover Mover
}

// RunServer runs one server of the swarm on node n and registry replica
// reg until ctx ends:
//
//  1. with bootstrap peers, it fetches the registry (SyncRegistry);
//  2. with Auto, it measures tau and tauI on ProbeSpan (or reads them from
//     the measurement cache), its RTT to the client nodes (ClientRTT),
//     chooses a tentative span (ChooseSpan) and announces JOIN with it,
//     waits JoinSettle and for the joiners before it to settle, chooses
//     again and announces its final span (JOIN, not tentative); with a
//     fixed span it announces JOIN with it;
//  3. it loads the span and measures it (server.New), serves the websocket
//     (unless Server.Listen is "") and the /swarm/inference/1 and
//     /swarm/info/1 streams (ServeStreams), and announces SERVING with its
//     websocket URL and libp2p addresses;
//  4. it announces its load (sessions' remaining times and caches, free
//     cache bytes) when sessions open and close, at most every 100 ms,
//     and every LoadRefresh while sessions are open;
//  5. when Serving.Mover asks, it moves to another span while serving
//     (see Mover: make-before-break when memory allows, else drain
//     first; the peer id stays, a make-before-break move gives the new
//     span a websocket URL of its own);
//  6. when ctx ends it announces LEFT, drains its sessions
//     (Server.DrainTimeout) and returns nil; when loading or serving fails
//     (or a drain-first move cannot load its new span) it announces DOWN
//     and returns the error.
//
// ready, if not nil, is called once the server serves, with its Mover; an
// error from it stops the server. log receives progress lines; nil discards them.
func RunServer(ctx context.Context, n *p2p.Node, reg *registry.Registry, cfg ServerConfig, log *slog.Logger, ready func(Serving) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Bootstrap) > 0 {
		log.Info("fetching the registry from the bootstrap peers", "peers", len(cfg.Bootstrap))
		if err := SyncRegistry(ctx, n, reg); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted before joining: nothing to announce
			}
			return err
		}
	}
	j := &joiner{n: n, reg: reg, cfg: cfg, log: log}
	var err error
	if cfg.Auto {
		err = j.joinAuto(ctx)
	} else {
		err = j.joinFixed()
	}
	if err != nil {
		if ctx.Err() != nil {
			return j.leave() // interrupted while joining
		}
		return err
	}
	return j.serve(ctx, ready)
}

// joiner carries a server through its lifecycle.
type joiner struct {
	n   *p2p.Node
	reg *registry.Registry
	cfg ServerConfig
	log *slog.Logger

	model swarm.ModelInfo
	// pages are the server's dashboard, state and metrics pages (set by
	// serve before it listens).
	pages *pages
	// metrics are the span servers' collectors, shared by the servers a
	// move loads (set by serve before it loads).
	metrics *server.Metrics
	// base is what the server advertises: before it serves, then the
	// announcer's latest entry (written under its lock).
	base swarm.ServerInfo
	span swarm.Span // the span it joined with
}

// reachability is the node's current verdict (p2p.Node.Reachability).
func (j *joiner) reachability() string {
	r, _ := j.n.Reachability()
	return string(r)
}

// joinFixed announces JOIN with the configured span.
func (j *joiner) joinFixed() error {
	m, err := blocks.Open(j.cfg.Server.Model, j.cfg.Server.ModelOptions()...)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	j.model = m.Info()
	m.Close()
	j.span = j.cfg.Server.Blocks
	j.base = swarm.ServerInfo{
		Model: j.model.Name, ModelBlocks: j.model.NBlocks, Span: j.span, MemoryBytes: j.cfg.Server.MemoryBytes,
		SlidingWindow: j.model.SlidingWindow, SlidingPattern: j.model.SlidingPattern,
		Provider: j.cfg.Provider, PublicName: j.cfg.PublicName, Reachability: j.reachability(),
		ProtocolVersion: swarm.ProtocolVersion, Endpoints: j.addrs(),
	}
	return j.reg.Publish(j.base, swarm.StateJoin)
}

// joinAuto measures the server, announces a tentative span, settles and
// announces the final one (placement by incremental CG-BP).
func (j *joiner) joinAuto(ctx context.Context) error {
	probeCfg := j.cfg.Server
	probeCfg.Blocks = ProbeSpan
	probe, err := server.MeasureSpan(ctx, probeCfg, j.log)
	if err != nil {
		return err
	}
	j.model = probe.Model
	rtt, from := ClientRTT(ctx, j.n, j.cfg.Bootstrap)
	// An emulated WAN link (--emulate-latency) delays every reply frame:
	// clients see it in every step's round trip, so placement must too.
	rtt += j.cfg.Server.EmulateLatency.Seconds()
	j.log.Info("measured", "tau", probe.Tau, "tauI_intercept", probe.TauI.Intercept, "tauI_slope", probe.TauI.Slope,
		"memory", j.cfg.Server.MemoryBytes, "client_rtt", rtt, "rtt_from", string(from))
	maxLength := j.cfg.MaxLength
	if maxLength == 0 {
		maxLength = j.model.MaxSeqLen
	}
	params := PlacementParams{Model: j.model, Sessions: j.cfg.Sessions, MaxLength: maxLength}
	j.base = swarm.ServerInfo{
		Model: j.model.Name, ModelBlocks: j.model.NBlocks, Tau: probe.Tau, TauI: probe.TauI,
		MemoryBytes: j.cfg.Server.MemoryBytes, ClientRTT: rtt, Provider: j.cfg.Provider,
		PublicName: j.cfg.PublicName, Reachability: j.reachability(),
		SlidingWindow: j.model.SlidingWindow, SlidingPattern: j.model.SlidingPattern,
		ProtocolVersion: swarm.ProtocolVersion, Endpoints: j.addrs(), Tentative: true,
		PlacementSessions: j.cfg.Sessions, PlacementMaxLength: maxLength,
	}
	self := registry.Entry{NodeID: j.reg.ID(), Incarnation: Unpublished, State: swarm.StateJoin, Info: j.base}
	span, err := ChooseSpan(j.verifiedSnapshot(ctx), self, params)
	if err != nil {
		return err
	}
	j.base.Span = span
	if err := j.reg.Publish(j.base, swarm.StateJoin); err != nil {
		return err
	}
	j.log.Info("announced JOIN with a tentative span", "span", span.String(), "settle", j.cfg.JoinSettle)
	if err := sleep(ctx, j.cfg.JoinSettle); err != nil {
		return err
	}
	if err := j.waitEarlierJoiners(ctx, params); err != nil {
		return err
	}
	own, ok := j.reg.Get(j.reg.ID())
	if !ok {
		return fmt.Errorf("node: own registry entry missing after JOIN")
	}
	own.Info = j.base
	if span, err = ChooseSpan(j.verifiedSnapshot(ctx), own, params); err != nil {
		return err
	}
	j.span = span
	j.base.Span, j.base.Tentative = span, false
	if err := j.reg.Publish(j.base, swarm.StateJoin); err != nil {
		return err
	}
	j.log.Info("settled on span", "span", span.String())
	return nil
}

// verifiedSnapshot is the registry's entries that placement may count
// (VerifyEntries: SERVING servers must answer over their libp2p identity).
func (j *joiner) verifiedSnapshot(ctx context.Context) []registry.Entry {
	snap := j.reg.Snapshot()
	return VerifyEntries(ctx, NewTransport(j.n.Host(), entryAddrs(snap)), snap, j.reg.ID(), DefaultVerifyTimeout, j.log)
}

// waitEarlierJoiners waits until no server that joined before this one is
// still choosing its span, re-checking on every registry change, for at
// most max(3 JoinSettle, 10 s); then ChooseSpan predicts the spans of those
// still choosing.
func (j *joiner) waitEarlierJoiners(ctx context.Context, params PlacementParams) error {
	wctx, cancel := context.WithTimeout(ctx, max(3*j.cfg.JoinSettle, minJoinWait))
	defer cancel()
	events := j.reg.Watch(wctx)
	for {
		own, ok := j.reg.Get(j.reg.ID())
		if !ok {
			return fmt.Errorf("node: own registry entry missing after JOIN")
		}
		earlier := EarlierJoiners(j.reg.Snapshot(), own, params)
		if len(earlier) == 0 {
			return nil
		}
		select {
		case _, ok := <-events:
			if ok {
				continue
			}
		case <-wctx.Done():
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		j.log.Warn("earlier joiners did not settle in time: predicting their spans", "joiners", earlier)
		return nil
	}
}

// addrs returns the node's libp2p multiaddrs with /p2p/ID.
func (j *joiner) addrs() []string {
	var out []string
	for _, a := range j.n.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// serve loads the span, serves it and announces SERVING and the load until
// ctx ends, moving the span when the Mover asks.
func (j *joiner) serve(ctx context.Context, ready func(Serving) error) error {
	// fatal receives why serving must stop: a websocket listener failed,
	// or a move left the server without a span.
	fatal := make(chan error, 1)
	scfg := j.cfg.Server
	scfg.Blocks = j.span
	f := newFront()
	reg := nodeMetrics()
	sm, err := server.NewMetrics(reg)
	if err != nil {
		return j.down(err)
	}
	j.metrics = sm
	j.pages = newPages(j, f, reg)
	f.pages = j.pages
	h := hosted{}
	if scfg.Listen != "" {
		ws, err := listenWebsocket(scfg.Listen, j.cfg.Announce, false, f, j.log, fatal)
		if err != nil {
			return j.down(err)
		}
		h.ws = ws
	}
	srv, err := j.load(ctx, scfg, h.url())
	if err != nil {
		err = errors.Join(err, h.ws.stop())
		if ctx.Err() != nil {
			return j.leave()
		}
		return j.down(err)
	}
	h.srv = srv
	f.set(srv)
	info := srv.Info()
	stopStreams := ServeStreams(j.n.Host(), f, wire.MaxStepPayload(info.MaxLength, srv.ModelInfo().DModel))
	defer stopStreams()
	tau, tauI := srv.Tau()
	j.base.Tau, j.base.TauI = tau, tauI
	a := newAnnouncer(j, h)
	if err := a.publish(); err != nil {
		return j.down(errors.Join(err, h.ws.stop(), srv.Close()))
	}
	j.log.Info("announced SERVING", "span", j.span.String(), "url", h.url())

	// A move in flight ends with rctx: when ctx ends or serving fails.
	rctx, cancelMoves := context.WithCancel(ctx)
	defer cancelMoves()
	mv := &mover{j: j, a: a, f: f, runCtx: rctx, fatal: fatal}
	err = nil
	if ready != nil {
		err = ready(Serving{ID: j.reg.ID(), Span: j.span, URL: h.url(), Addrs: j.addrs(), Mover: mv})
	}
	var stopPlans func() error
	if err == nil && len(j.cfg.Planners) > 0 {
		stopPlans, err = j.followPlans(rctx, mv)
	}
	rebalanced := make(chan struct{})
	if err == nil && len(j.cfg.Planners) == 0 && j.cfg.Rebalance.Interval > 0 {
		rb := j.cfg.Rebalance
		rb.Model = cmp.Or(rb.Model, j.model.Name)
		rb.Sessions = cmp.Or(rb.Sessions, j.cfg.Sessions)
		rb.MaxLength = cmp.Or(rb.MaxLength, j.cfg.MaxLength, j.model.MaxSeqLen)
		j.log.Info("rebalancing without a planner group", "interval", rb.Interval)
		go func() {
			defer close(rebalanced)
			_ = RebalanceLoop(rctx, j.reg.ID(), j.reg, mv, rb, j.log)
		}()
	} else {
		close(rebalanced)
	}
	if err == nil {
		err = a.run(ctx, fatal)
	}
	cancelMoves()
	<-rebalanced
	if stopPlans != nil {
		if perr := stopPlans(); perr != nil {
			j.log.Warn("stopping the planner replica", "err", perr)
		}
	}
	mv.close() // waits for a move in flight to end
	if err == nil {
		j.leave() // before the sessions drain: no new session is routed here
	}
	cur := a.current()
	cur.srv.Shutdown(context.Background())
	closeErr := errors.Join(cur.ws.stop(), cur.srv.Close())
	if err != nil {
		return j.down(errors.Join(err, closeErr))
	}
	if closeErr != nil { // after LEFT: nothing more to announce
		j.log.Warn("closing the server", "err", closeErr)
	}
	return nil
}

// load loads and measures the span server of cfg (server.New), ready to
// answer info challenges with the node's key and advertising its
// websocket URL (if not empty) and the node's libp2p addresses.
func (j *joiner) load(ctx context.Context, cfg server.Config, url string) (*server.Server, error) {
	srv, err := server.New(ctx, cfg, j.log)
	if err != nil {
		return nil, err
	}
	srv.SetMetrics(j.metrics)
	if key := j.n.PrivateKey(); key != nil {
		srv.SetInfoSigner(server.InfoSigner{Peer: j.n.ID().String(), Sign: key.Sign})
	}
	if url != "" {
		srv.AddEndpoints(url)
	}
	srv.AddEndpoints(j.addrs()...)
	return srv, nil
}

// leave announces LEFT and pushes it out. It returns nil: if no peer
// hears it, the silence makes the server LEFT anyway.
func (j *joiner) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if err := j.reg.Leave(ctx); err != nil {
		j.log.Warn("announcing LEFT failed", "err", err)
		return nil
	}
	j.log.Info("announced LEFT")
	return nil
}

// down announces DOWN (the server failed) and returns cause.
func (j *joiner) down(cause error) error {
	info := j.base
	info.Tentative = false
	info.MovingTo, info.Draining = swarm.Span{}, swarm.Span{}
	if err := j.reg.Publish(info, swarm.StateDown); err != nil {
		return errors.Join(cause, fmt.Errorf("node: announce DOWN: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	_ = j.reg.Sync(ctx) // push it out before exiting; gossip already sent it
	j.log.Error("announced DOWN", "err", cause)
	return cause
}

// sleep waits d or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
