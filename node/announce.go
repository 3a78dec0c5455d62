package node

import (
	"context"
	"sync"
	"time"

	"github.com/swarmllm/swarm/server"
	"github.com/swarmllm/swarm/swarm"
)

// announcer publishes a serving server's entry with its current load, and
// with the phase of a span move in progress. It is safe for concurrent
// use: the Mover swaps the current server and the phase while the run loop
// publishes the load.
type announcer struct {
	j *joiner
	// swapped (1-buffered) is signalled when the current server changes,
	// so that run watches the new server's load.
	swapped chan struct{}

	mu sync.Mutex
	// Guarded by mu (Publish is called with it held, so entries are
	// published in the order their phases happen).
	curLocked   hosted
	phaseLocked movePhase
}

// hosted is a span server and the websocket listener that advertises it
// (nil without websocket).
type hosted struct {
	srv *server.Server
	ws  *websocket
}

// url is the websocket URL advertised; empty without websocket.
func (h hosted) url() string {
	if h.ws == nil {
		return ""
	}
	return h.ws.url
}

// movePhase is what a server's entry shows of a span move (see
// swarm.ServerInfo.MovingTo); the zero value is SERVING, not moving.
type movePhase struct {
	// join announces JOIN with span: the server drains before loading.
	join bool
	span swarm.Span
	// movingTo and draining are the ServerInfo fields.
	movingTo, draining swarm.Span
}

func newAnnouncer(j *joiner, h hosted) *announcer {
	return &announcer{j: j, swapped: make(chan struct{}, 1), curLocked: h}
}

// current returns the server new sessions reach and its websocket.
func (a *announcer) current() hosted {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.curLocked
}

// infoLocked is the entry: the current server's advertised info (span,
// tau, tauI, memory, cache room, sessions' load), with the node's
// endpoints (the websocket URL, then the current libp2p addresses, which
// change as relay reservations come and go), provider, t*_j and the move
// phase.
func (a *announcer) infoLocked() swarm.ServerInfo {
	in := a.curLocked.srv.Info().ServerInfo
	in.ID = ""
	in.Provider, in.PublicName = a.j.cfg.Provider, a.j.cfg.PublicName
	in.Reachability = a.j.reachability()
	in.ClientRTT = a.j.base.ClientRTT
	in.PlacementSessions, in.PlacementMaxLength = a.j.base.PlacementSessions, a.j.base.PlacementMaxLength
	in.Endpoints = nil
	if u := a.curLocked.url(); u != "" {
		in.Endpoints = append(in.Endpoints, u)
	}
	in.Endpoints = append(in.Endpoints, a.j.addrs()...)
	in.MovingTo, in.Draining = a.phaseLocked.movingTo, a.phaseLocked.draining
	if a.phaseLocked.join {
		in.Span = a.phaseLocked.span
	}
	return in
}

// publish announces the entry: SERVING, or JOIN while draining before a
// move.
func (a *announcer) publish() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.publishLocked()
}

func (a *announcer) publishLocked() error {
	info := a.infoLocked()
	a.j.base = info
	state := swarm.StateServing
	if a.phaseLocked.join {
		state = swarm.StateJoin
	}
	return a.j.reg.Publish(info, state)
}

// announce sets the move phase, and the current server when next.srv is
// not nil, and publishes the entry.
func (a *announcer) announce(next hosted, p movePhase) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if next.srv != nil && next != a.curLocked {
		a.curLocked = next
		select {
		case a.swapped <- struct{}{}:
		default: // a swap is pending
		}
	}
	a.phaseLocked = p
	return a.publishLocked()
}

// run announces the load on change (coalesced within loadPublishGap) and
// every LoadRefresh while sessions are open, until ctx ends (nil), or a
// websocket stops serving on its own or a move fails leaving the server
// without a span (the error on fatal).
func (a *announcer) run(ctx context.Context, fatal <-chan error) error {
	var refresh <-chan time.Time
	if a.j.cfg.LoadRefresh > 0 {
		t := time.NewTicker(a.j.cfg.LoadRefresh)
		defer t.Stop()
		refresh = t.C
	}
	last := time.Now()
	var gap *time.Timer
	var gapC <-chan time.Time
	defer func() {
		if gap != nil {
			gap.Stop()
		}
	}()
	publish := func() {
		last = time.Now()
		if err := a.publish(); err != nil {
			a.j.log.Warn("announcing the load failed", "err", err)
		}
	}
	for {
		srv := a.current().srv
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			return err
		case <-a.swapped:
			// Watch the new server's load from now on.
		case <-srv.LoadChanged():
			if wait := loadPublishGap - time.Since(last); wait > 0 {
				if gapC == nil {
					gap = time.NewTimer(wait)
					gapC = gap.C
				}
				continue
			}
			publish()
		case <-gapC:
			gapC = nil
			publish()
		case <-a.j.n.ReachabilityChanged():
			publish()
		case <-refresh:
			if len(srv.Info().Sessions) > 0 {
				publish()
			}
		}
	}
}
