package churn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/loadtest"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/supervise"
)

// joinSettle is the servers' --join-settle: they start one after another.
const joinSettle = 300 * time.Millisecond

// stopTimeout is how long the harness waits for its processes after
// SIGTERM before SIGKILL, at the end; drainTimeout is the servers'
// --drain-timeout.
const (
	stopTimeout  = 10 * time.Second
	drainTimeout = 5 * time.Second
)

// Report is the outcome of a run; times are seconds.
type Report struct {
	// Requests, Failed and WrongOutputs count both phases' requests, the
	// failed ones and the ones that worked with an output other than the
	// reference of their prompt.
	Requests     int `json:"requests"`
	Failed       int `json:"failed"`
	WrongOutputs int `json:"wrong_outputs"`
	// P50Baseline ... P99Churn are nearest-rank percentiles of the whole
	// request time (first byte sent to last token) of the requests that
	// worked, in the no-churn and the churn phase.
	P50Baseline float64 `json:"p50_baseline_s"`
	P99Baseline float64 `json:"p99_baseline_s"`
	P50Churn    float64 `json:"p50_churn_s"`
	P99Churn    float64 `json:"p99_churn_s"`
	// Baseline and Churn summarize each phase (TTFT percentiles, TPOT).
	Baseline loadtest.Phase `json:"baseline"`
	Churn    loadtest.Phase `json:"churn"`
	// With an idle attack (Config.IdleOpens), its phase's request time
	// percentiles, its summary and what the attacker did.
	P50IdleAttack float64         `json:"p50_idle_attack_s,omitempty"`
	P99IdleAttack float64         `json:"p99_idle_attack_s,omitempty"`
	IdlePhase     *loadtest.Phase `json:"idle_attack_phase,omitempty"`
	IdleAttack    *IdleAttack     `json:"idle_attack,omitempty"`
	// With a black hole (Config.BlackHole), its phase's percentiles, its
	// summary and what the black hole saw.
	P50BlackHole   float64         `json:"p50_black_hole_s,omitempty"`
	P99BlackHole   float64         `json:"p99_black_hole_s,omitempty"`
	BlackHolePhase *loadtest.Phase `json:"black_hole_phase,omitempty"`
	BlackHole      *BlackHole      `json:"black_hole,omitempty"`
	// With slow bodies (Config.SlowBodies), that phase's percentiles, its
	// summary and what the attacker saw; with a huge prompt
	// (Config.HugePromptBytes), how the proxy answered it.
	P50SlowBodies   float64         `json:"p50_slow_bodies_s,omitempty"`
	P99SlowBodies   float64         `json:"p99_slow_bodies_s,omitempty"`
	SlowBodiesPhase *loadtest.Phase `json:"slow_bodies_phase,omitempty"`
	SlowBodies      *SlowBodies     `json:"slow_bodies,omitempty"`
	HugePrompt      *HugePrompt     `json:"huge_prompt,omitempty"`
	Disruptions
	// Servers, Streams, Duration (seconds per phase) and MaxTokens are the
	// load; ServerBlocks the blocks each server had memory for.
	Servers      int     `json:"servers"`
	Streams      int     `json:"streams"`
	Duration     float64 `json:"phase_s"`
	MaxTokens    int     `json:"max_tokens"`
	ServerBlocks int     `json:"server_blocks"`
	// FirstWrong describes the first wrong output, if any.
	FirstWrong string `json:"first_wrong_output,omitempty"`
	// Shutdown is the processes' shutdown error, if any.
	Shutdown string `json:"shutdown_error,omitempty"`
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a few lines for people.
func (r Report) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d requests (%d servers, %d streams, %gs per phase, %d tokens): %d failed, %d wrong outputs\n"+
		"no churn: p50 %.3fs p99 %.3fs\nchurn:    p50 %.3fs p99 %.3fs (p99 ratio %.2f)\n"+
		"disruptions: %v, stopped then resumed %d, stopped then killed %d, skipped %d; replacements %d (%d failed), crashed %d\n",
		r.Requests, r.Servers, r.Streams, r.Duration, r.MaxTokens, r.Failed, r.WrongOutputs,
		r.P50Baseline, r.P99Baseline, r.P50Churn, r.P99Churn, r.P99Churn/max(r.P99Baseline, 1e-9),
		r.Kinds, r.Resumed, r.KilledStopped, r.Skipped, r.Replacements, r.ReplacementErrors, r.Crashed)
	if r.IdleAttack != nil && err == nil {
		_, err = fmt.Fprintf(w, "idle attack: p50 %.3fs p99 %.3fs (p99 ratio %.2f); attacker %+v\n",
			r.P50IdleAttack, r.P99IdleAttack, r.P99IdleAttack/max(r.P99Baseline, 1e-9), *r.IdleAttack)
	}
	if r.BlackHole != nil && err == nil {
		_, err = fmt.Fprintf(w, "black hole: p50 %.3fs p99 %.3fs (p99 ratio %.2f); it saw %+v\n",
			r.P50BlackHole, r.P99BlackHole, r.P99BlackHole/max(r.P99Baseline, 1e-9), *r.BlackHole)
	}
	if r.SlowBodies != nil && err == nil {
		_, err = fmt.Fprintf(w, "slow bodies: p50 %.3fs p99 %.3fs (p99 ratio %.2f); attacker %+v\n",
			r.P50SlowBodies, r.P99SlowBodies, r.P99SlowBodies/max(r.P99Baseline, 1e-9), *r.SlowBodies)
	}
	if r.HugePrompt != nil && err == nil {
		h := r.HugePrompt
		_, err = fmt.Fprintf(w, "huge prompt: %d bytes x %d: statuses %v, p50 %.3fs max %.3fs; proxy RSS %d -> %d bytes, peak %d -> %d\n",
			h.Bytes, h.Requests, h.Statuses, h.P50S, h.MaxS, h.RSSBefore, h.RSSAfter, h.PeakBefore, h.PeakAfter)
	}
	firsts := []string{r.Baseline.FirstErr, r.Churn.FirstErr, r.FirstWrong, r.Shutdown}
	for _, ph := range []*loadtest.Phase{r.IdlePhase, r.BlackHolePhase, r.SlowBodiesPhase} {
		if ph != nil {
			firsts = append(firsts, ph.FirstErr)
		}
	}
	for _, s := range firsts {
		if s != "" && err == nil {
			_, err = fmt.Fprintln(w, "first error:", s)
		}
	}
	return err
}

// hugePromptRequests is how many huge prompts Config.HugePromptBytes sends.
const hugePromptRequests = 5

// result is one request of a phase.
type result struct {
	prompt int
	loadtest.Sample
}

// Run starts the swarm and the proxy, runs the no-churn phase, the
// idle-attack and black-hole phases when asked, then the churn phase,
// stops every process and reports; logs gets the processes'
// stderr and the harness's own lines. It fails when the swarm cannot
// start or the no-churn phase gives no reference for a prompt.
func Run(ctx context.Context, cfg Config, logs io.Writer) (rep Report, err error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.Exe == "" {
		if cfg.Exe, err = os.Executable(); err != nil {
			return Report{}, fmt.Errorf("churn: find the swarm binary: %w", err)
		}
	}
	for _, p := range []*string{&cfg.Model, &cfg.Tokenizer} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return Report{}, fmt.Errorf("churn: %w", err)
			}
		}
	}
	m, err := blocks.Open(cfg.Model, blocks.WithTokenizer(cfg.Tokenizer))
	if err != nil {
		return Report{}, fmt.Errorf("churn: %w", err)
	}
	info := m.Info()
	m.Close()
	if cfg.ServerBlocks == 0 {
		cfg.ServerBlocks = max(1, (2*info.NBlocks+cfg.Servers-1)/cfg.Servers)
	}
	cfg.ServerBlocks = min(cfg.ServerBlocks, info.NBlocks)
	rep = Report{Servers: cfg.Servers, Streams: cfg.Streams, Duration: cfg.Duration.Seconds(), MaxTokens: cfg.MaxTokens, ServerBlocks: cfg.ServerBlocks}

	servers := supervise.NewGroup("server", logs, "swarm bench churn: server: ", stopTimeout)
	proxies := supervise.NewGroup("proxy", logs, "swarm bench churn: proxy: ", stopTimeout)
	defer func() {
		// The proxy first: its sessions end before their servers do.
		if serr := errors.Join(proxies.Stop(), servers.Stop()); serr != nil {
			rep.Shutdown = serr.Error()
		}
	}()
	p := &pool{cfg: cfg, nBlocks: info.NBlocks, group: servers, logs: logs,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), stats: Disruptions{Kinds: map[string]int{}},
		// M_j = m_j (s_m + R s_c) with R = Streams sessions of the whole
		// context: CG-BP gives each server ServerBlocks blocks (paper 003
		// eq. 2 and Alg. 1).
		spec: launch.Serve{Model: cfg.Model, Tokenizer: cfg.Tokenizer,
			Memory:         int64(cfg.ServerBlocks) * (info.BlockBytes + int64(cfg.Streams)*info.CacheBytes(info.MaxSeqLen)),
			TargetSessions: cfg.Streams, MaxLength: info.MaxSeqLen, JoinSettle: joinSettle, DrainTimeout: drainTimeout}}
	for range cfg.Servers {
		if _, err := p.start(ctx); err != nil {
			return rep, fmt.Errorf("churn: %w", err)
		}
	}
	var proxyArgs []string
	if cfg.ProxyReadTimeout > 0 {
		proxyArgs = append(proxyArgs, "--read-timeout", cfg.ProxyReadTimeout.String())
	}
	url, proxy, err := launch.StartProxy(ctx, proxies, cfg.StartTimeout, cfg.Exe, cfg.Model, cfg.Tokenizer, p.addrs(), proxyArgs...)
	if err != nil {
		return rep, fmt.Errorf("churn: %w", err)
	}
	fmt.Fprintf(logs, "swarm bench churn: proxy %s\n", url)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Streams}}
	req := func(ctx context.Context, prompt int) loadtest.Sample {
		ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		defer cancel()
		return loadtest.Completions(hc, url, info.Name, cfg.Prompts[prompt], cfg.MaxTokens)(ctx)
	}
	if err := warmUp(ctx, cfg, req); err != nil {
		return rep, err
	}
	if cfg.HugePromptBytes > 0 {
		fmt.Fprintf(logs, "swarm bench churn: %d prompts of %d bytes\n", hugePromptRequests, cfg.HugePromptBytes)
		h, err := hugePrompts(ctx, url, info.Name, proxy.Cmd.Process.Pid, cfg.HugePromptBytes, hugePromptRequests)
		if err != nil {
			return rep, err
		}
		rep.HugePrompt = &h
	}

	fmt.Fprintf(logs, "swarm bench churn: no-churn phase, %v\n", cfg.Duration)
	base := runPhase(ctx, cfg, req, nil)
	ref, err := references(cfg, base)
	if err != nil {
		return rep, err
	}
	phases := [][]result{base}
	names := []string{"baseline"}
	if cfg.IdleOpens > 0 {
		fmt.Fprintf(logs, "swarm bench churn: idle-attack phase, %v, %d idle session opens\n", cfg.Duration, cfg.IdleOpens)
		var targets []target
		for _, m := range p.running() {
			targets = append(targets, target{url: m.srv.URL, span: m.span})
		}
		var att IdleAttack
		phases = append(phases, runPhase(ctx, cfg, req, func(ctx context.Context) { att = idleAttack(ctx, targets, info.Name, cfg.IdleOpens) }))
		names = append(names, "idle_attack")
		rep.IdleAttack = &att
	}
	if cfg.SlowBodies > 0 {
		readTimeout := cfg.ProxyReadTimeout
		if readTimeout == 0 {
			readTimeout = ingress.DefaultHTTPConfig().ReadTimeout
		}
		fmt.Fprintf(logs, "swarm bench churn: slow-body phase, %v, %d connections (proxy read timeout %v)\n", cfg.Duration, cfg.SlowBodies, readTimeout)
		var sb SlowBodies
		phases = append(phases, runPhase(ctx, cfg, req, func(ctx context.Context) {
			sb = slowBodies(ctx, strings.TrimPrefix(url, "http://"), cfg.SlowBodies, readTimeout)
		}))
		names = append(names, "slow_bodies")
		rep.SlowBodies = &sb
	}
	if cfg.BlackHole {
		bh, err := startBlackHole(ctx, p.addrs(), info.NBlocks)
		if err != nil {
			return rep, err
		}
		fmt.Fprintf(logs, "swarm bench churn: black-hole phase, %v, a fake server at %s\n", cfg.Duration, bh.ln.Addr())
		phases = append(phases, runPhase(ctx, cfg, req, nil))
		names = append(names, "black_hole")
		st := bh.stats()
		rep.BlackHole = &st
		if err := bh.close(); err != nil {
			fmt.Fprintf(logs, "swarm bench churn: black hole: %v\n", err)
		}
	}
	fmt.Fprintf(logs, "swarm bench churn: churn phase, %v, a disruption every %v-%v\n", cfg.Duration, cfg.KillEvery, cfg.KillEvery*5/4)
	phases = append(phases, runPhase(ctx, cfg, req, func(ctx context.Context) {
		for {
			wait := cfg.KillEvery + time.Duration(p.rng.Int64N(int64(cfg.KillEvery/4)+1))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			p.disrupt(ctx)
		}
	}))
	names = append(names, "churn")
	rep.Disruptions = p.stats
	for i, ph := range phases {
		name := names[i]
		var samples []loadtest.Sample
		var totals []float64
		for _, r := range ph {
			samples = append(samples, r.Sample)
			if r.Err != nil {
				continue
			}
			totals = append(totals, r.Total.Seconds())
			if r.Text != ref[r.prompt] {
				rep.WrongOutputs++
				if rep.FirstWrong == "" {
					rep.FirstWrong = fmt.Sprintf("%s: prompt %q gave %q, the reference is %q", name, cfg.Prompts[r.prompt], r.Text, ref[r.prompt])
				}
			}
		}
		slices.Sort(totals)
		sum := loadtest.Summarize(name, samples, cfg.Duration)
		p50, p99 := loadtest.Percentile(totals, 0.5), loadtest.Percentile(totals, 0.99)
		switch name {
		case "baseline":
			rep.Baseline, rep.P50Baseline, rep.P99Baseline = sum, p50, p99
		case "idle_attack":
			rep.IdlePhase, rep.P50IdleAttack, rep.P99IdleAttack = &sum, p50, p99
		case "black_hole":
			rep.BlackHolePhase, rep.P50BlackHole, rep.P99BlackHole = &sum, p50, p99
		case "slow_bodies":
			rep.SlowBodiesPhase, rep.P50SlowBodies, rep.P99SlowBodies = &sum, p50, p99
		default:
			rep.Churn, rep.P50Churn, rep.P99Churn = sum, p50, p99
		}
		rep.Requests += sum.Requests
		rep.Failed += sum.Errors
	}
	return rep, nil
}

// warmUp sends each prompt until it works once, within StartTimeout: the
// proxy has joined the swarm but may not have read the whole registry yet.
func warmUp(ctx context.Context, cfg Config, req func(context.Context, int) loadtest.Sample) error {
	deadline := time.Now().Add(cfg.StartTimeout)
	for i := range cfg.Prompts {
		for {
			s := req(ctx, i)
			if s.Err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("churn: the proxy did not serve %q within %v: %w", cfg.Prompts[i], cfg.StartTimeout, s.Err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond): // the registry's next gossip
			}
		}
	}
	return nil
}

// runPhase runs Streams loops of requests, each cycling through the
// prompts, for Duration; disrupt, when not nil, runs alongside with a
// context that ends with the phase. A request started before the end runs
// to its end.
func runPhase(ctx context.Context, cfg Config, req func(context.Context, int) loadtest.Sample, disrupt func(context.Context)) []result {
	pctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		mu  sync.Mutex
		all []result
		wg  sync.WaitGroup
	)
	if disrupt != nil {
		wg.Go(func() { disrupt(pctx) })
	}
	for s := range cfg.Streams {
		wg.Go(func() {
			for i := s; pctx.Err() == nil; i += cfg.Streams {
				r := result{prompt: i % len(cfg.Prompts)}
				r.Sample = req(ctx, r.prompt)
				if ctx.Err() != nil {
					return // interrupted: not a failure of the swarm
				}
				mu.Lock()
				all = append(all, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all
}

// references returns each prompt's greedy output in the no-churn phase:
// its first request's that worked (the others must agree with it, or
// count as wrong outputs).
func references(cfg Config, base []result) ([]string, error) {
	ref := make([]string, len(cfg.Prompts))
	seen := make([]bool, len(cfg.Prompts))
	for _, r := range base {
		if r.Err != nil {
			continue
		}
		if !seen[r.prompt] {
			ref[r.prompt], seen[r.prompt] = r.Text, true
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("churn: no request of prompt %q worked in the no-churn phase: no reference", cfg.Prompts[i])
		}
	}
	return ref, nil
}
