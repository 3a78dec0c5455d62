package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// ErrInvariant is returned (wrapped) when a routing decision breaks the
// simulated physics: a chain that violates Lemma 3.1, a server asked for more
// caches than it can ever hold, or memory over-committed at a session start.
// It always points at a bug in the router or the simulator.
var ErrInvariant = errors.New("sim: invariant violated")

// eventKind orders simultaneous events: completions free their caches
// before starts, retries and arrivals at the same instant use them.
type eventKind uint8

const (
	evEnd    eventKind = iota
	evSwitch           // the replanned placement takes over (--move-bandwidth)
	evStart
	evAttempt
	evArrival
)

type event struct {
	t       float64
	kind    eventKind
	seq     uint64 // FIFO among equal (t, kind): determinism
	session int
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// hold is the caches one session holds (or has reserved) on one server.
type hold struct {
	session int
	caches  int
}

// hop is one server of a session's chain, in fleet indices.
type hop struct {
	server int // index into Fleet.Servers
	blocks int // k_j, blocks processed there
}

type session struct {
	arrival float64
	start   float64
	end     float64
	setup   float64 // calibration constants between start and prefill (0 without)
	prefill float64 // sum_j (tI_cj + k_j tauI_j): the first token once started
	decode  float64 // sum_j (t_cj + k_j tau_j): each later token, alone
	// Under a shared server model (serial, batched) the decode tokens
	// progress at a rate that changes as sessions start and end:
	left    float64 // decode tokens still to produce at time last
	last    float64 // when left was last updated (>= the first token)
	cur     float64 // current time per decode token
	chain   []hop
	slots   []int // the cache slots of the plan the chain was routed on
	retries int
	started bool
	done    bool
}

// engine simulates one algorithm on one fleet and one arrival sequence.
type engine struct {
	fleet *Fleet
	work  Workload
	alg   Algorithm
	plan  placement.Plan
	route RouteFunc
	clock func() time.Time
	setup float64 // Calibration.setup(alg): added before every prefill

	active []int            // fleet indices of servers hosting blocks
	snap   []routing.Server // routing snapshot template, per active server
	ping   [][]float64      // RTTs among active servers (PETALS routing)
	holds  [][]hold         // per fleet server: caches held or reserved
	used   []int            // per fleet server: caches of started sessions

	// next, when not nil, is the plan new sessions use from switchAt on
	// (a live replanning that takes time to load its weights); switched
	// is set once it has.
	next     *placement.Plan
	switchAt float64
	switched bool

	sessions []session
	queue    eventQueue
	seq      uint64
	now      float64

	conc, maxConc int
	routeTime     time.Duration
	routeCalls    int
}

func newEngine(f *Fleet, w Workload, alg Algorithm, plan placement.Plan, clock func() time.Time) (*engine, error) {
	route, err := alg.Router(f.Petals)
	if err != nil {
		return nil, err
	}
	if len(plan.Spans) != len(f.Servers) || len(plan.CacheSlots) != len(f.Servers) {
		return nil, fmt.Errorf("%w: plan has %d spans and %d cache-slot counts for %d servers",
			ErrInvariant, len(plan.Spans), len(plan.CacheSlots), len(f.Servers))
	}
	e := &engine{
		fleet: f, work: w, alg: alg, plan: plan, route: route, clock: clock,
		setup: f.Calibration.setup(alg),
		holds: make([][]hold, len(f.Servers)),
		used:  make([]int, len(f.Servers)),
	}
	e.setPlan(plan)
	return e, nil
}

// setPlan makes plan the placement new sessions are routed on: the
// routing snapshot of its active servers (and their pings for PETALS
// routing). Sessions already routed keep their chains.
func (e *engine) setPlan(plan placement.Plan) {
	f, w, alg := e.fleet, e.work, e.alg
	e.plan = plan
	e.active, e.snap, e.ping = nil, nil, nil
	lI := w.InputTokens
	for j, s := range f.Servers {
		if plan.Spans[j].Empty() {
			continue
		}
		e.active = append(e.active, j)
		rs := routing.Server{
			Name:       s.Name,
			Span:       plan.Spans[j],
			Tau:        s.Hardware.Tau,
			RTT:        f.TokenRTT(j),
			TauPrefill: s.Hardware.TauI.At(lI),
			RTTPrefill: f.InputRTT(j, lI),
			CacheSlots: plan.CacheSlots[j],
		}
		if alg.Routing == "petals" {
			// PETALS' client knows only pings, not the model's t_cj.
			rs.RTT = f.ClientRTT[j]
		}
		e.snap = append(e.snap, rs)
	}
	if alg.Routing == "petals" {
		e.ping = make([][]float64, len(e.active))
		for a, i := range e.active {
			e.ping[a] = make([]float64, len(e.active))
			for b, j := range e.active {
				e.ping[a][b] = f.ServerRTT[i][j]
			}
		}
	}
}

func (e *engine) push(t float64, kind eventKind, s int) {
	e.seq++
	heap.Push(&e.queue, event{t: t, kind: kind, seq: e.seq, session: s})
}

// run simulates the sessions arriving at the given times (ascending).
func (e *engine) run(arrivals []float64) error {
	e.sessions = make([]session, len(arrivals))
	for i, t := range arrivals {
		e.sessions[i].arrival = t
		e.push(t, evArrival, i)
	}
	if e.next != nil {
		e.push(e.switchAt, evSwitch, -1)
	}
	for e.queue.Len() > 0 {
		ev := heap.Pop(&e.queue).(event)
		e.now = ev.t
		var err error
		switch ev.kind {
		case evArrival:
			e.conc++
			e.maxConc = max(e.maxConc, e.conc)
			if e.alg.Admission == AdmitWait {
				err = e.book(ev.session)
			} else {
				err = e.attempt(ev.session)
			}
		case evAttempt:
			err = e.attempt(ev.session)
		case evStart:
			err = e.start(ev.session)
		case evSwitch:
			e.setPlan(*e.next)
			e.switched = true
		case evEnd:
			if s := &e.sessions[ev.session]; !s.started || s.done || ev.t != s.end {
				// Superseded: the session's end moved (shared server
				// model), or its start was postponed past the booked end.
				continue
			}
			e.finish(ev.session)
		}
		if err != nil {
			return fmt.Errorf("session %d at t = %.6g s: %w", ev.session, e.now, err)
		}
	}
	return nil
}

// routeNow asks the algorithm's router for a chain at the current time.
func (e *engine) routeNow() ([]hop, error) {
	servers := slices.Clone(e.snap)
	for a, j := range e.active {
		loads := make([]swarm.SessionLoad, 0, len(e.holds[j]))
		for _, h := range e.holds[j] {
			loads = append(loads, swarm.SessionLoad{Remaining: e.sessions[h.session].end - e.now, Caches: h.caches})
		}
		servers[a].Sessions = loads
		servers[a].AsOf = e.now
	}
	// Eq. (8) by default (paper 003 and its simulator); eq. (4) with
	// LinkDecode, as the live client routes.
	req := routing.Request{Blocks: e.fleet.Model.Blocks, MaxLength: e.work.OutputTokens, Now: e.now,
		Prefill: e.fleet.LinkCost == LinkAllTokens}
	var t0 time.Time
	if e.clock != nil {
		t0 = e.clock()
	}
	r, err := e.route(servers, req, e.ping)
	if e.clock != nil {
		e.routeTime += e.clock().Sub(t0)
	}
	e.routeCalls++
	if err != nil {
		return nil, fmt.Errorf("%s routing: %w", e.alg.Routing, err)
	}
	return e.chain(r)
}

// chain checks a route against Lemma 3.1 independently of the router and
// turns it into fleet indices with block counts.
func (e *engine) chain(r routing.Route) ([]hop, error) {
	next := 0
	out := make([]hop, 0, len(r.Hops))
	for i, h := range r.Hops {
		if h.Server < 0 || h.Server >= len(e.active) {
			return nil, fmt.Errorf("%w: hop %d names server %d of %d", ErrInvariant, i, h.Server, len(e.active))
		}
		j := e.active[h.Server]
		span := e.plan.Spans[j]
		if !span.Contains(next) || h.Span.Start != next || h.Span.End != span.End {
			return nil, fmt.Errorf("%w: hop %d (%s, hosts %s) processes %s, but the next block is %d (Lemma 3.1)",
				ErrInvariant, i, e.fleet.Servers[j].Name, span, h.Span, next)
		}
		out = append(out, hop{server: j, blocks: h.Span.Len()})
		next = span.End
	}
	if next != e.fleet.Model.Blocks {
		return nil, fmt.Errorf("%w: route stops at block %d of %d", ErrInvariant, next, e.fleet.Model.Blocks)
	}
	return out, nil
}

// times returns the first-token and per-later-token times of a chain once
// started, the two sums of eq. (1).
func (e *engine) times(c []hop) (prefill, decode float64) {
	lI := e.work.InputTokens
	for _, h := range c {
		hw := e.fleet.Servers[h.server].Hardware
		k := float64(h.blocks)
		prefill += e.fleet.InputRTT(h.server, lI) + k*hw.TauI.At(lI)
		decode += e.fleet.TokenRTT(h.server) + k*hw.Tau
	}
	return prefill, decode
}

// admit records the chain and its times and schedules the end: eq. (1)
// after the calibration's setup constants, which the session spends
// holding its caches.
func (e *engine) admit(i int, c []hop, start float64) {
	s := &e.sessions[i]
	s.chain = c
	s.slots = e.plan.CacheSlots
	s.start = start
	s.setup = e.setup
	s.prefill, s.decode = e.times(c)
	s.end = start + s.setup + s.prefill + float64(e.work.OutputTokens-1)*s.decode
	for _, h := range c {
		e.holds[h.server] = append(e.holds[h.server], hold{session: i, caches: h.blocks})
	}
	e.push(s.end, evEnd, i)
}

// book routes session i (AdmitWait), reserves its caches and schedules its
// start at the earliest time every server of the chain has room, or, with
// Calibration.RoundWaits, at the first PETALS back-off retry from then on.
func (e *engine) book(i int) error {
	c, err := e.routeNow()
	if err != nil {
		return err
	}
	start := e.now
	for _, h := range c {
		t, ok := e.roomAt(h.server, h.blocks)
		if !ok {
			return fmt.Errorf("%w: %s routed to %s, which needs %d caches but holds at most %d",
				ErrInvariant, e.alg.Routing, e.fleet.Servers[h.server].Name, h.blocks, e.plan.CacheSlots[h.server])
		}
		start = max(start, t)
	}
	if e.fleet.Calibration.RoundWaits && start > e.now {
		p := e.fleet.Petals
		start = e.now + BackoffWait(start-e.now, p.MinBackoff, p.MaxBackoff)
	}
	e.admit(i, c, start)
	e.push(start, evStart, i)
	return nil
}

// roomAt returns the earliest time >= now at which server j has `need`
// cache slots free, given the caches held or reserved and when they are
// released; false when it never will.
func (e *engine) roomAt(j, need int) (float64, bool) {
	slots := e.plan.CacheSlots[j]
	if need > slots {
		return 0, false
	}
	held := 0
	ends := make([]hold, len(e.holds[j]))
	for k, h := range e.holds[j] {
		held += h.caches
		ends[k] = h
	}
	if slots-held >= need {
		return e.now, true
	}
	slices.SortFunc(ends, func(a, b hold) int {
		ta, tb := e.sessions[a.session].end, e.sessions[b.session].end
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return a.session - b.session
	})
	for _, h := range ends {
		held -= h.caches
		if slots-held >= need {
			return max(e.sessions[h.session].end, e.now), true
		}
	}
	return 0, false // unreachable: need <= slots
}

// start marks a booked session as started and checks that memory is not
// over-committed (eq. 2 with the plan's cache slots).
func (e *engine) start(i int) error {
	s := &e.sessions[i]
	if e.shared() || e.switched {
		if t, ok := e.blockedUntil(s.chain, s.slots); ok {
			// Shared server models move ends later than booked, and a
			// switch to a replanned placement may leave a server fewer
			// cache slots than its sessions from before hold: the caches
			// this session reserved are not free yet. Try again at the
			// next end of a running session on a full server.
			e.push(t, evStart, i)
			return nil
		}
	}
	for _, h := range s.chain {
		e.used[h.server] += h.blocks
		if e.used[h.server] > s.slots[h.server] {
			return fmt.Errorf("%w: %s holds %d caches at a session start, capacity %d",
				ErrInvariant, e.fleet.Servers[h.server].Name, e.used[h.server], s.slots[h.server])
		}
	}
	s.started = true
	if e.shared() {
		s.start = e.now
		s.last = e.now + s.setup + s.prefill
		s.left = float64(e.work.OutputTokens - 1)
		e.restep()
	} else if e.now != s.start {
		// Postponed past its booking (a replanned placement took over):
		// eq. (1) from the actual start.
		s.start = e.now
		s.end = s.start + s.setup + s.prefill + float64(e.work.OutputTokens-1)*s.decode
		e.push(s.end, evEnd, i)
	}
	return nil
}

// attempt routes session i (AdmitRetry) and starts it if every server of
// the chain has room now; otherwise it backs off and tries again.
func (e *engine) attempt(i int) error {
	c, err := e.routeNow()
	if err != nil {
		return err
	}
	room := true
	for _, h := range c {
		if e.used[h.server]+h.blocks > e.plan.CacheSlots[h.server] {
			room = false
			break
		}
	}
	s := &e.sessions[i]
	if !room {
		s.retries++
		p := e.fleet.Petals
		delay := min(p.MinBackoff*math.Exp2(float64(s.retries-1)), p.MaxBackoff)
		e.push(e.now+delay, evAttempt, i)
		return nil
	}
	e.admit(i, c, e.now)
	return e.start(i)
}

// finish releases a session's caches.
func (e *engine) finish(i int) {
	s := &e.sessions[i]
	for _, h := range s.chain {
		hs := e.holds[h.server]
		for k := range hs {
			if hs[k].session == i {
				e.holds[h.server] = slices.Delete(hs, k, k+1)
				break
			}
		}
		e.used[h.server] -= h.blocks
	}
	s.done = true
	e.conc--
	if e.shared() {
		e.restep()
	}
}

// shared reports whether concurrent sessions slow each other's tokens
// (ServerSerial, ServerBatched).
func (e *engine) shared() bool { return e.fleet.ServerModel != ServerIndependent }

// blockedUntil returns, when some server of chain c lacks the cache room
// for it among the started sessions (slots: the plan the chain was routed
// on), the earliest end of a started session on such a server; false when
// every server has room. A chain routed on a plan always fits once the
// started sessions end, so the time is finite.
func (e *engine) blockedUntil(c []hop, slots []int) (float64, bool) {
	t, blocked := math.Inf(1), false
	for _, h := range c {
		if e.used[h.server]+h.blocks <= slots[h.server] {
			continue
		}
		blocked = true
		for _, x := range e.holds[h.server] {
			if r := &e.sessions[x.session]; r.started && !r.done {
				t = min(t, r.end)
			}
		}
	}
	return max(t, e.now), blocked
}

// restep brings every running session's decode progress up to now and
// recomputes its time per token and end under the server model, after a
// session started or ended: the compute term of server j is
// k_j tau_j * Fleet.stepFactor for the sessions running on j now
// (started, not done; a session counts from its start, prefill included).
// The first token is not slowed. Changed ends are pushed as new events;
// the old ones are skipped.
func (e *engine) restep() {
	load := make([]int, len(e.fleet.Servers))
	n := make([]int, len(e.fleet.Servers))
	for j, hs := range e.holds {
		for _, h := range hs {
			if r := &e.sessions[h.session]; r.started && !r.done {
				load[j] += h.caches
				n[j]++
			}
		}
	}
	for i := range e.sessions {
		s := &e.sessions[i]
		if !s.started || s.done {
			continue
		}
		if e.now > s.last {
			s.left = max(0, s.left-(e.now-s.last)/s.cur)
			s.last = e.now
		}
		cur := 0.0
		for _, h := range s.chain {
			hw := e.fleet.Servers[h.server].Hardware
			cur += e.fleet.TokenRTT(h.server) + float64(h.blocks)*hw.Tau*e.fleet.stepFactor(h.server, h.blocks, load[h.server], n[h.server])
		}
		s.cur = cur
		if end := s.last + s.left*cur; end != s.end {
			s.end = end
			e.push(end, evEnd, i)
		}
	}
}
