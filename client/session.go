package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/swarmllm/swarm/swarm"
)

// chunk is inputs a hop processed: hidden states [n, DModel] at positions
// pos..pos+n-1.
type chunk struct {
	pos, n int
	data   []float32
}

// hop is one server of a session's chain with its client-side cache: the
// hidden states that entered it, per position, in the order sent.
type hop struct {
	cand    Candidate
	span    swarm.Span // blocks it processes
	conn    *hopConn
	history []chunk // contiguous from position 0
	length  int     // positions in history
	stats   hopStats
}

// record appends the inputs of a successful step to the history (after
// truncating it at pos: a step at pos < length replaces what follows).
func (h *hop) record(pos int, x []float32, n, d int) {
	h.truncate(pos, d)
	h.history = append(h.history, chunk{pos: pos, n: n, data: append([]float32(nil), x...)})
	h.length = pos + n
}

// truncate drops the history at positions >= pos.
func (h *hop) truncate(pos, d int) {
	for len(h.history) > 0 {
		last := &h.history[len(h.history)-1]
		switch {
		case last.pos >= pos:
			h.history = h.history[:len(h.history)-1]
			continue
		case last.pos+last.n > pos:
			last.n = pos - last.pos
			last.data = last.data[:last.n*d]
		}
		break
	}
	h.length = min(h.length, pos)
}

// Session is one generation's sessions at a chain of servers. It
// implements blocks.Forwarder. A Session is used by one goroutine at a time
// (Stats may be called from any).
type Session struct {
	c         *Client
	maxLength int
	d         int

	mu sync.Mutex
	// Guarded by mu.
	hops      []*hop
	replaced  []HopStats
	excluded  map[string]error // endpoints that failed this session
	failovers int
	// badOutputs counts results refused for NaN or Inf (ErrBadOutput).
	badOutputs int
	closed     bool
	gen        genStats
}

// Open opens a session of up to maxLength tokens (prompt plus generated):
// it discovers the candidates, chooses a chain covering all blocks with
// WS-RR (Route), and opens a session at each hop (waiting up to the alloc
// timeout where a server queues it). A server that cannot open its part is
// left out and the chain chosen again. ctx bounds the opening only; each
// Forward takes its own.
//
// Errors: *NoChainError (errors.Is ErrNoChain) naming the uncovered blocks
// and the servers left out; ErrArgument for maxLength < 1; ctx.Err().
func (c *Client) Open(ctx context.Context, maxLength int) (*Session, error) {
	return c.OpenPlan(ctx, Plan{}, maxLength)
}

// OpenPlan opens a session of up to maxLength tokens on a route already
// chosen from probed candidates (Route; the ingress routes before it
// opens): no candidate is probed and no route computed unless a planned
// server cannot open its part, in which case it is left out and the
// session falls back to Open's discovery and routing. A Plan without hops
// is Open. The plan must be a chain of block servers covering [0, L).
//
// Errors: as Open's, and ErrArgument for a plan that is not such a chain.
func (c *Client) OpenPlan(ctx context.Context, plan Plan, maxLength int) (*Session, error) {
	if maxLength < 1 {
		return nil, fmt.Errorf("%w: max length %d, want >= 1", ErrArgument, maxLength)
	}
	if c.model.MaxSeqLen > 0 && maxLength > c.model.MaxSeqLen {
		return nil, fmt.Errorf("%w: max length %d exceeds the model's context of %d tokens", ErrArgument, maxLength, c.model.MaxSeqLen)
	}
	if err := c.checkPlan(plan); err != nil {
		return nil, err
	}
	s := &Session{c: c, maxLength: maxLength, d: c.model.DModel, excluded: map[string]error{}}
	whole := c.model.Blocks()
	for {
		if len(plan.Hops) == 0 {
			cands, srcErr := c.candidates(ctx, s.excluded)
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("client: open: %w", err)
			}
			if srcErr != nil {
				return nil, srcErr
			}
			var err error
			plan, err = c.route(RouteRequest{Model: c.model, Need: whole, MaxLength: maxLength, Exclude: s.excluded}, cands)
			if err != nil {
				return nil, err
			}
		}
		hops, failed, err := s.openHops(ctx, plan.Hops)
		if err == nil {
			s.hops = hops
			c.cfg.log.Info("session open", "chain", chainString(hops))
			return s, nil
		}
		if errCanceled(err) && ctx.Err() != nil {
			return nil, err
		}
		c.cfg.log.Warn("server cannot open its part of the chain: choosing again without it", "server", failed, "err", err)
		s.excluded[failed] = err
		if banWorthy(err) {
			c.cfg.bans.Fail(failed, err)
		}
		plan = Plan{}
	}
}

// checkPlan checks that a plan given to OpenPlan is empty or a chain of
// block servers covering the client's model, hop after hop.
func (c *Client) checkPlan(plan Plan) error {
	if len(plan.Hops) == 0 {
		return nil
	}
	next := 0
	for _, h := range plan.Hops {
		if h.Candidate.Info.FullRange || h.Span.Start != next || h.Span.Empty() {
			return fmt.Errorf("%w: plan %s is not a chain of block servers over blocks %s", ErrArgument, plan, c.model.Blocks())
		}
		next = h.Span.End
	}
	if next != c.model.NBlocks {
		return fmt.Errorf("%w: plan %s ends at block %d, the model has %d", ErrArgument, plan, next, c.model.NBlocks)
	}
	return nil
}

// route runs Route and reports it to the route hook.
func (c *Client) route(req RouteRequest, cands []Candidate) (Plan, error) {
	p, err := Route(req, cands)
	if c.cfg.onRoute != nil {
		c.cfg.onRoute(RouteEvent{Need: req.Need, Plan: p, Err: err})
	}
	return p, err
}

// openHops opens a session at every planned hop. On failure it closes the
// ones opened and returns the endpoint that failed.
func (s *Session) openHops(ctx context.Context, plan []Hop) ([]*hop, string, error) {
	hops := make([]*hop, 0, len(plan))
	for _, p := range plan {
		conn, err := openHop(ctx, &s.c.cfg, p.Candidate.Endpoint, s.c.model.Name, p.Span, s.maxLength, s.d)
		if err != nil {
			for _, h := range hops {
				h.conn.abort()
			}
			return nil, p.Candidate.Endpoint.Inference, err
		}
		hops = append(hops, &hop{cand: p.Candidate, span: p.Span, conn: conn})
	}
	return hops, "", nil
}

// Forward sends the hidden states [nTokens, DModel] at positions
// pos..pos+nTokens-1 to each hop of the chain in turn
// (hub-spoke) and returns the last hop's output [nTokens, DModel]. pos may
// be below the session's length (the hops truncate their caches). When a
// hop fails (connection lost, step timeout, ShuttingDown/Internal/
// UnknownSession errors), it is replaced by servers covering its blocks,
// which get the hop's input history replayed at its positions, and the
// step is retried there.
//
// A step of n tokens may take the step timeout times (1 + n/64).
//
// Errors: ErrArgument (positions, shape), ErrClosed, ErrFailover (wrapping
// the hop's error and *NoChainError) when no replacement works, a
// *wire.Error for a request the server rejects, ctx.Err().
func (s *Session) Forward(ctx context.Context, pos int, hidden []float32, nTokens int) ([]float32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case nTokens < 1 || len(hidden) != nTokens*s.d:
		return nil, fmt.Errorf("%w: %d hidden values for %d tokens of d_model %d", ErrArgument, len(hidden), nTokens, s.d)
	case pos < 0 || pos+nTokens > s.maxLength:
		return nil, fmt.Errorf("%w: positions %d..%d outside the session's %d tokens", ErrArgument, pos, pos+nTokens-1, s.maxLength)
	case pos > s.hops[0].length:
		return nil, fmt.Errorf("%w: position %d leaves a gap after the %d positions sent", ErrArgument, pos, s.hops[0].length)
	}
	x := hidden
	for i := 0; i < len(s.hops); {
		h := s.hops[i]
		r, err := h.conn.step(ctx, pos, x, nTokens, s.d, s.stepTimeout(nTokens))
		if errors.Is(err, ErrUnhealthy) && !s.replaceable(ctx, i) {
			// A suspicion is no proof: with nobody to take over, the
			// server may still answer within the step timeout.
			s.c.cfg.log.Warn("server reported unhealthy, but no other server can take its blocks: waiting for its result",
				"server", h.cand.Endpoint.Inference, "blocks", h.span.String(), "err", err)
			r, err = h.conn.resume(ctx)
		}
		if err == nil {
			h.record(pos, x, nTokens, s.d)
			h.stats.add(nTokens, r)
			x = r.hidden
			i++
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("client: %w", ctx.Err())
		}
		if !failoverWorthy(err) {
			return nil, err
		}
		if ferr := s.failover(ctx, i, pos, err); ferr != nil {
			return nil, ferr
		}
	}
	return x, nil
}

// replaceable reports whether servers other than hop i's (and those that
// failed this session) cover its blocks now: one probe round and a route.
func (s *Session) replaceable(ctx context.Context, i int) bool {
	h := s.hops[i]
	exclude := maps.Clone(s.excluded)
	exclude[h.cand.Endpoint.Inference] = ErrUnhealthy
	cands, err := s.c.candidates(ctx, exclude)
	if err != nil {
		return false
	}
	_, err = Route(RouteRequest{Model: s.c.model, Need: h.span, MaxLength: s.maxLength, Exclude: exclude}, cands)
	return err == nil
}

// stepTimeout is the time a step of n tokens may take at one server.
func (s *Session) stepTimeout(n int) time.Duration {
	return s.c.cfg.stepTimeout * time.Duration(1+n/64)
}

// replayCompatible returns the candidates that compute a span as the
// server of was did: the same weight conversion, attention-cache dtype and
// kernels (swarm.ServerInfo.Kernels). A replay on them rebuilds the failed
// hop's caches bit for bit; on others only up to the last bits, or not at
// all for another conversion of the model.
func replayCompatible(cands []Candidate, was swarm.ServerInfo) []Candidate {
	var out []Candidate
	for _, c := range cands {
		in := c.Info.ServerInfo
		if in.WeightDType == was.WeightDType && in.CacheDType == was.CacheDType && in.Kernels == was.Kernels {
			out = append(out, c)
		}
	}
	return out
}

// failover replaces hop i, which failed with cause while processing a step
// at pos: it chooses servers covering the hop's blocks (WS-RR on Lemma 3.1
// sub-spans; among the servers replayCompatible with the failed one when
// they cover the blocks, so that the replay is bit for bit), opens
// sessions there, replays the hop's history (its inputs at
// positions 0..pos-1; each replacement's outputs feed the next
// replacement's replay), and splices them into the chain. A replacement
// that fails is left out and the choice made again. When no server covers
// the blocks, it routes again at each change the HealthSource reports, for
// up to the failover wait (WithFailoverWait) since the hop failed.
func (s *Session) failover(ctx context.Context, i, pos int, cause error) error {
	failed := s.hops[i]
	failed.conn.abort()
	url := failed.cand.Endpoint.Inference
	if !expired(cause) { // an expired session says nothing bad of its server
		s.excluded[url] = cause
	}
	if banWorthy(cause) {
		s.c.cfg.bans.Fail(url, cause)
	}
	s.replaced = append(s.replaced, failed.stats.snapshot(failed, cause))
	if errors.Is(cause, ErrBadOutput) {
		s.badOutputs++
	}
	log := s.c.cfg.log
	log.Warn("hop failed: failing over", "hop", i, "server", url, "blocks", failed.span.String(), "position", pos, "err", cause)
	failed.truncate(pos, s.d) // its inputs from pos on are sent again by the retry
	health, _ := s.c.cfg.source.(HealthSource)
	var waitUntil <-chan time.Time // the end of the wait for coverage
	waiting := false
	if health != nil && s.c.cfg.failoverWait > 0 {
		t := time.NewTimer(s.c.cfg.failoverWait)
		defer t.Stop()
		waitUntil = t.C
	}
	for {
		var changed <-chan struct{}
		if health != nil {
			changed = health.Changed() // before asking: no change is missed
		}
		cands, srcErr := s.c.candidates(ctx, s.excluded)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("client: failover: %w", err)
		}
		if srcErr != nil {
			return fmt.Errorf("%w: hop %d at %s (blocks %s) failed: %w; %w", ErrFailover, i, url, failed.span, cause, srcErr)
		}
		req := RouteRequest{Model: s.c.model, Need: failed.span, MaxLength: s.maxLength, Exclude: s.excluded}
		// Servers that compute as the failed one did first, so that the
		// replay gives its caches bit for bit; any server if they cannot
		// cover the blocks.
		plan, err := s.c.route(req, replayCompatible(cands, failed.cand.Info.ServerInfo))
		if err != nil {
			plan, err = s.c.route(req, cands)
		}
		if err != nil {
			if waitUntil != nil {
				if !waiting {
					waiting = true
					log.Info("no server covers the failed hop's blocks: waiting for one", "blocks", failed.span.String(),
						"for", s.c.cfg.failoverWait, "err", err)
				}
				select {
				case <-changed:
					continue
				case <-ctx.Done():
					return fmt.Errorf("client: failover: %w", ctx.Err())
				case <-waitUntil:
				}
			}
			return fmt.Errorf("%w: hop %d at %s (blocks %s) failed: %w; no replacement: %w", ErrFailover, i, url, failed.span, cause, err)
		}
		s.failovers++
		if s.failovers > s.c.cfg.maxFailovers {
			return fmt.Errorf("%w: hop %d (blocks %s) failed: %w; giving up after %d replacements", ErrFailover, i, failed.span, cause, s.c.cfg.maxFailovers)
		}
		hops, bad, err := s.replace(ctx, plan, failed)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("client: failover: %w", ctx.Err())
			}
			log.Warn("replacement failed: leaving it out", "server", bad, "err", err)
			s.excluded[bad] = err
			if banWorthy(err) {
				s.c.cfg.bans.Fail(bad, err)
			}
			continue
		}
		s.hops = append(s.hops[:i], append(hops, s.hops[i+1:]...)...)
		log.Info("failed over", "blocks", failed.span.String(), "replayed_positions", failed.length, "chain", chainString(s.hops))
		return nil
	}
}

// replace opens the planned hops and replays the failed hop's history
// through them in order. On failure it closes what it opened and returns
// the endpoint that failed.
func (s *Session) replace(ctx context.Context, plan Plan, failed *hop) ([]*hop, string, error) {
	hops, bad, err := s.openHops(ctx, plan.Hops)
	if err != nil {
		return nil, bad, err
	}
	in := failed.history
	for _, h := range hops {
		out, err := s.replay(ctx, h, in, failed.length)
		if err != nil {
			for _, h := range hops {
				h.conn.abort()
			}
			return nil, h.cand.Endpoint.Inference, err
		}
		in = out
	}
	return hops, "", nil
}

// replay sends the inputs in (positions 0..length-1) to h in steps of at
// most the replay chunk (all at once for 0), records them as h's history,
// and returns h's outputs as the next hop's inputs.
func (s *Session) replay(ctx context.Context, h *hop, in []chunk, length int) ([]chunk, error) {
	if length == 0 {
		return nil, nil
	}
	all := make([]float32, 0, length*s.d)
	for _, c := range in {
		all = append(all, c.data...)
	}
	step := s.c.cfg.replayChunk
	if step == 0 {
		step = length
	}
	var out []chunk
	for pos := 0; pos < length; pos += step {
		n := min(step, length-pos)
		x := all[pos*s.d : (pos+n)*s.d]
		r, err := h.conn.step(ctx, pos, x, n, s.d, s.stepTimeout(n))
		if err != nil {
			return nil, fmt.Errorf("client: replay positions %d..%d at %s: %w", pos, pos+n-1, h.cand.Endpoint.Inference, err)
		}
		h.record(pos, x, n, s.d)
		h.stats.add(n, r)
		h.stats.replayed += n
		out = append(out, chunk{pos: pos, n: n, data: r.hidden})
	}
	return out, nil
}

// Close closes the sessions at every hop (Close, then Closed within the
// step timeout) and the connections. It is idempotent; Stats stay
// readable.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	errs := make([]error, len(s.hops))
	var wg sync.WaitGroup
	for i, h := range s.hops {
		wg.Go(func() { errs[i] = h.conn.close(s.c.cfg.stepTimeout) })
	}
	wg.Wait()
	for i, h := range s.hops {
		if errs[i] == nil && h.stats.steps > 0 {
			s.c.cfg.bans.Succeed(h.cand.Endpoint.Inference) // served the session to its end
		}
	}
	return errors.Join(errs...)
}

// Chain returns the current chain: each hop's server URL and the blocks it
// processes.
func (s *Session) Chain() []HopStats {
	return s.Stats().Hops
}

// chainString formats a chain for logs: "URL[0:2] -> URL[2:5]".
func chainString(hops []*hop) string {
	out := ""
	for i, h := range hops {
		if i > 0 {
			out += " -> "
		}
		out += fmt.Sprintf("%s[%s]", h.cand.Endpoint.Inference, h.span)
	}
	return out
}
