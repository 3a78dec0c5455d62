package churn

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
	"github.com/swarmllm/swarm/swarm"
)

// Kinds of disruption, as the Report names them.
const (
	KindKill = "sigkill"
	KindStop = "sigstop"
	KindTerm = "sigterm"
)

// member is one server the pool started.
type member struct {
	srv     launch.Server
	span    swarm.Span
	stopped bool // SIGSTOPped and not resumed yet
	gone    bool // signaled to die, or died
}

// pool is the swarm's servers: it starts them, disrupts them and keeps
// count. Its methods are called from one goroutine at a time.
type pool struct {
	cfg     Config
	spec    launch.Serve // the flags every server gets; Bootstrap varies
	nBlocks int
	group   *supervise.Group
	logs    io.Writer
	rng     *rand.Rand

	members []*member
	stats   Disruptions
}

// Disruptions counts what the churn phase did to the swarm.
type Disruptions struct {
	// Kinds counts disruptions by signal: "sigkill", "sigstop", "sigterm".
	Kinds map[string]int `json:"kills"`
	// Resumed and KilledStopped count the stopped servers later resumed
	// (SIGCONT) and killed (SIGKILL).
	Resumed       int `json:"stopped_then_resumed"`
	KilledStopped int `json:"stopped_then_killed"`
	// Replacements counts the servers that joined during the churn phase;
	// ReplacementErrors the ones that failed to start.
	Replacements      int `json:"replacements"`
	ReplacementErrors int `json:"replacement_errors"`
	// Skipped counts ticks with no server the others could spare.
	Skipped int `json:"skipped_disruptions"`
	// Crashed counts servers that exited without being signaled.
	Crashed int `json:"crashed"`
}

// running returns the members neither gone nor stopped, noticing the ones
// that exited on their own.
func (p *pool) running() []*member {
	var out []*member
	for _, m := range p.members {
		if !m.gone {
			select {
			case <-m.srv.Child.Done():
				m.gone = true
				p.stats.Crashed++
				fmt.Fprintf(p.logs, "swarm bench churn: server %d (%s) exited on its own\n", m.srv.Child.Cmd.Process.Pid, m.span)
				continue
			default:
			}
		}
		if !m.gone && !m.stopped {
			out = append(out, m)
		}
	}
	return out
}

// covers reports whether the running members other than skip hold every
// block of the model.
func (p *pool) covers(skip *member) bool {
	held := make([]bool, p.nBlocks)
	for _, m := range p.running() {
		if m == skip {
			continue
		}
		for b := m.span.Start; b < min(m.span.End, p.nBlocks); b++ {
			held[b] = true
		}
	}
	for _, h := range held {
		if !h {
			return false
		}
	}
	return true
}

// start starts one server, joining through the running members (none for
// the first).
func (p *pool) start(ctx context.Context) (*member, error) {
	spec := p.spec
	spec.Bootstrap = nil
	for _, m := range p.running() {
		spec.Bootstrap = append(spec.Bootstrap, m.srv.Addrs...)
	}
	srv, err := spec.Start(ctx, p.group, p.cfg.StartTimeout, p.cfg.Exe)
	if err != nil {
		return nil, err
	}
	span, err := swarm.ParseSpan(srv.Span)
	if err != nil {
		return nil, fmt.Errorf("server %d printed blocks %q: %w", srv.Child.Cmd.Process.Pid, srv.Span, err)
	}
	m := &member{srv: srv, span: span}
	p.members = append(p.members, m)
	fmt.Fprintf(p.logs, "swarm bench churn: server blocks %s pid %d %s\n", span, srv.Child.Cmd.Process.Pid, srv.URL)
	return m, nil
}

// addrs returns the libp2p addresses of the running members.
func (p *pool) addrs() []string {
	var out []string
	for _, m := range p.running() {
		out = append(out, m.srv.Addrs...)
	}
	return out
}

// disrupt is one tick of the churn phase: it settles the server stopped
// at the previous tick (resumed or killed, at random), takes a random
// server the others can spare away by a random signal, then starts
// replacements until Servers run.
func (p *pool) disrupt(ctx context.Context) {
	for _, m := range p.members {
		if !m.stopped || m.gone {
			continue
		}
		m.stopped = false
		if p.rng.IntN(2) == 0 {
			p.signal(m, sigCont, "SIGCONT")
			p.stats.Resumed++
		} else {
			p.signal(m, signals[KindKill], "SIGKILL")
			m.gone = true
			p.stats.KilledStopped++
		}
	}
	var spare []*member
	for _, m := range p.running() {
		if p.covers(m) {
			spare = append(spare, m)
		}
	}
	if len(spare) == 0 {
		p.stats.Skipped++
		fmt.Fprintln(p.logs, "swarm bench churn: no server can be spared without losing coverage")
	} else {
		m := spare[p.rng.IntN(len(spare))]
		kind := []string{KindKill, KindStop, KindTerm}[p.rng.IntN(3)]
		p.signal(m, signals[kind], strings.ToUpper(kind))
		p.stats.Kinds[kind]++
		m.stopped = kind == KindStop
		m.gone = !m.stopped
	}
	for len(p.running()) < p.cfg.Servers && ctx.Err() == nil {
		if _, err := p.start(ctx); err != nil {
			if ctx.Err() != nil {
				return // the phase ended while it started
			}
			p.stats.ReplacementErrors++
			fmt.Fprintf(p.logs, "swarm bench churn: replacement server: %v\n", err)
			return
		}
		p.stats.Replacements++
	}
}

func (p *pool) signal(m *member, sig syscall.Signal, name string) {
	fmt.Fprintf(p.logs, "swarm bench churn: %s to server %d (%s) at %s\n", name, m.srv.Child.Cmd.Process.Pid, m.span, time.Now().UTC().Format("15:04:05.000"))
	if err := m.srv.Child.Signal(sig); err != nil {
		fmt.Fprintf(p.logs, "swarm bench churn: signal server %d: %v\n", m.srv.Child.Cmd.Process.Pid, err)
	}
}
