// Package convergence measures how fast a registry write spreads through a
// swarm: it starts N libp2p nodes in this process on loopback, joined as in
// real life (every node knows only a bootstrap node and finds the others
// through the DHT rendezvous; nobody wires a full mesh), has one node write
// an entry, and records when each other node holds it. It reports the time
// until 50%, 95% and 100% of the other nodes hold the entry, the numbers
// OpenTela reports for its gossip (paper 000, Sec. 5: "50% of nodes converge
// in 7 to 13 ms ... 95% within 1 second ... around 10 seconds with 128
// nodes").
//
// It backs `swarm registry bench` and the package's Go benchmark.
//
// This package must never import server, client, placement, routing, blocks
// or cmd.
package convergence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/swarmllm/swarm/registry"
	"github.com/swarmllm/swarm/swarm"
	"github.com/swarmllm/swarm/swarm/p2p"
)

// ErrBadParams is returned by Measure for invalid parameters.
var ErrBadParams = errors.New("convergence: bad parameters")

// Params configures one measurement.
type Params struct {
	// Nodes is the swarm size N (>= 2).
	Nodes int
	// Trials is the number of writes measured, each the first write of a
	// different node (1..Nodes-1).
	Trials int
	// Registry is the registry timing of every node (default LAN).
	Registry registry.Config
	// Transport is "tcp" or "quic" (loopback).
	Transport string
	// Timeout bounds each trial; nodes that do not hold the entry by then
	// are counted as missing.
	Timeout time.Duration
	// SetupTimeout bounds starting the swarm and the warm-up write.
	SetupTimeout time.Duration
	// Settle is a quiet window: after the warm-up write, the trials start
	// once the swarm's total number of connections has not changed for
	// this long (checked every second, bounded by SetupTimeout), i.e. once
	// discovery and the DHT have finished connecting the nodes. 0 starts
	// the trials right after the warm-up write (a cold swarm).
	Settle time.Duration
}

// DefaultParams returns N = 16, 5 trials, the LAN registry timing, TCP,
// 60 s per trial, 5 min of setup and a 5 s quiet window.
func DefaultParams() Params {
	return Params{
		Nodes:        16,
		Trials:       5,
		Registry:     registry.DefaultLANConfig(),
		Transport:    "tcp",
		Timeout:      time.Minute,
		SetupTimeout: 5 * time.Minute,
		Settle:       5 * time.Second,
	}
}

// Trial is one write: the times (from the Publish call) until 50%, 95% and
// 100% of the N-1 other nodes held the entry (nearest-rank percentiles).
type Trial struct {
	// Writer is the index of the writing node.
	Writer int `json:"writer"`
	// P50, P95 and P100 are in nanoseconds in JSON.
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	P100 time.Duration `json:"p100_ns"`
	// Missing counts the nodes that did not hold the entry within the
	// timeout; P100 is then the timeout.
	Missing int `json:"missing"`
}

// Result is a measurement on one swarm.
type Result struct {
	// Nodes is N.
	Nodes int `json:"nodes"`
	// Setup is the time to start the swarm and complete the warm-up write.
	Setup time.Duration `json:"setup_ns"`
	// Settled is the time from the start until the quiet window ended.
	Settled time.Duration `json:"settled_ns"`
	// Trials are the measured writes.
	Trials []Trial `json:"trials"`
	// P50, P95 and P100 are the medians over the trials.
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	P100 time.Duration `json:"p100_ns"`
	// Missing is the total of the trials' Missing.
	Missing int `json:"missing"`
}

// Validate checks the parameters.
func (p Params) Validate() error {
	switch {
	case p.Nodes < 2:
		return fmt.Errorf("%w: nodes = %d, want >= 2", ErrBadParams, p.Nodes)
	case p.Trials < 1 || p.Trials > p.Nodes-1:
		return fmt.Errorf("%w: trials = %d, want 1..nodes-1 = %d (each trial is a first write by a new node)",
			ErrBadParams, p.Trials, p.Nodes-1)
	case p.Transport != "tcp" && p.Transport != "quic":
		return fmt.Errorf("%w: transport %q, want tcp or quic", ErrBadParams, p.Transport)
	case p.Timeout <= 0 || p.SetupTimeout <= 0 || p.Settle < 0:
		return fmt.Errorf("%w: timeouts must be > 0 and the settle pause >= 0", ErrBadParams)
	}
	if err := p.Registry.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadParams, err)
	}
	return nil
}

// member is one node of the measured swarm.
type member struct {
	node   *p2p.Node
	reg    *registry.Registry
	events <-chan registry.Event
}

// Measure starts the swarm, runs the trials and tears the swarm down.
func Measure(ctx context.Context, p Params) (res Result, err error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	ms, err := startSwarm(ctx, p)
	defer func() { err = errors.Join(err, stopSwarm(ms)) }()
	if err != nil {
		return Result{}, err
	}
	// Warm-up: node 0 writes, and every node must hold it (this also lets
	// the GossipSub mesh form).
	sctx, scancel := context.WithTimeout(ctx, p.SetupTimeout)
	defer scancel()
	if tr, err := trial(sctx, ms, 0, p.SetupTimeout); err != nil {
		return Result{}, fmt.Errorf("convergence: warm-up write: %w", err)
	} else if tr.Missing > 0 {
		return Result{}, fmt.Errorf("convergence: warm-up write reached only %d of %d nodes within %v",
			p.Nodes-1-tr.Missing, p.Nodes-1, p.SetupTimeout)
	}
	res = Result{Nodes: p.Nodes, Setup: time.Since(start)}
	if err := settle(sctx, ms, p.Settle); err != nil {
		return Result{}, fmt.Errorf("convergence: settling: %w", err)
	}
	res.Settled = time.Since(start)
	for k := range p.Trials {
		writer := 1 + k // each trial a new writer, never the warm-up writer
		tr, err := trial(ctx, ms, writer, p.Timeout)
		if err != nil {
			return Result{}, err
		}
		res.Trials = append(res.Trials, tr)
		res.Missing += tr.Missing
	}
	med := func(f func(Trial) time.Duration) time.Duration {
		ds := make([]time.Duration, 0, len(res.Trials))
		for _, tr := range res.Trials {
			ds = append(ds, f(tr))
		}
		return percentile(ds, 50)
	}
	res.P50 = med(func(t Trial) time.Duration { return t.P50 })
	res.P95 = med(func(t Trial) time.Duration { return t.P95 })
	res.P100 = med(func(t Trial) time.Duration { return t.P100 })
	return res, nil
}

// startSwarm starts node 0, then the others bootstrapping from it.
func startSwarm(ctx context.Context, p Params) ([]*member, error) {
	listen := "/ip4/127.0.0.1/tcp/0"
	if p.Transport == "quic" {
		listen = "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	var ms []*member
	var boot []string
	for i := range p.Nodes {
		cfg := p2p.DefaultConfig()
		cfg.ListenAddrs = []string{listen}
		cfg.Bootstrap = boot
		node, err := p2p.New(cfg)
		if err != nil {
			return ms, fmt.Errorf("convergence: start node %d: %w", i, err)
		}
		reg, err := registry.Join(node, p.Registry)
		if err != nil {
			return ms, errors.Join(fmt.Errorf("convergence: join node %d: %w", i, err), node.Close())
		}
		ms = append(ms, &member{node: node, reg: reg, events: reg.Watch(ctx)})
		if i == 0 {
			for _, a := range node.Addrs() {
				boot = append(boot, a.String())
			}
		}
	}
	for i, m := range ms {
		rctx, cancel := context.WithTimeout(ctx, p.SetupTimeout)
		err := m.node.WaitReady(rctx)
		cancel()
		if err != nil {
			return ms, fmt.Errorf("convergence: node %d never reached the bootstrap node: %w", i, err)
		}
	}
	return ms, nil
}

func stopSwarm(ms []*member) error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			err := errors.Join(m.reg.Close(), m.node.Close())
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// trial has ms[writer] publish its entry and waits until every other node
// holds it or timeout passes.
func trial(ctx context.Context, ms []*member, writer int, timeout time.Duration) (Trial, error) {
	w := ms[writer]
	wid := w.reg.ID()
	// Drop events queued before this trial.
	for _, m := range ms {
		drain(m.events)
	}
	t0 := time.Now()
	err := w.reg.Publish(swarm.ServerInfo{Model: "convergence", Span: swarm.Span{Start: writer, End: writer + 1}}, swarm.StateServing)
	if err != nil {
		return Trial{}, fmt.Errorf("convergence: node %d publish: %w", writer, err)
	}
	session := w.reg.Session()
	lat := make([]time.Duration, 0, len(ms)-1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, m := range ms {
		if i == writer {
			continue
		}
		wg.Go(func() {
			for {
				select {
				case <-tctx.Done():
					return
				case ev, ok := <-m.events:
					if !ok {
						return
					}
					if ev.Entry.NodeID == wid && ev.Entry.Session == session {
						mu.Lock()
						lat = append(lat, ev.At.Sub(t0))
						mu.Unlock()
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return Trial{}, ctx.Err()
	}
	tr := Trial{Writer: writer, Missing: len(ms) - 1 - len(lat)}
	for range tr.Missing {
		lat = append(lat, timeout)
	}
	tr.P50, tr.P95, tr.P100 = percentile(lat, 50), percentile(lat, 95), percentile(lat, 100)
	return tr, nil
}

// settle waits until the total number of connections in the swarm has not
// changed for quiet (sampled every second).
func settle(ctx context.Context, ms []*member, quiet time.Duration) error {
	if quiet <= 0 {
		return nil
	}
	count := func() int {
		n := 0
		for _, m := range ms {
			n += len(m.node.Host().Network().Peers())
		}
		return n
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := count(), time.Now()
	for time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if c := count(); c != last {
			last, since = c, time.Now()
		}
	}
	return nil
}

func drain(ch <-chan registry.Event) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// percentile returns the nearest-rank q-th percentile (q in (0, 100]) of ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
