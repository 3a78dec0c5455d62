package fullrange

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmllm/swarm/api"
	"github.com/swarmllm/swarm/swarm"
)

// StateDown is Info.State while the engine's /health or /v1/models fails:
// ingresses do not route to the replica then.
const StateDown = "down"

// Server is a full-range replica's sidecar.
type Server struct {
	cfg     Config
	log     *slog.Logger
	backend *url.URL
	http    *http.Client
	proxy   *httputil.ReverseProxy

	child     *exec.Cmd
	childDone chan struct{}
	childErr  error

	mu sync.Mutex
	// infoLocked is the advertised document; guarded by mu.
	infoLocked api.Info
	// changed is closed and replaced when infoLocked's state changes.
	changedLocked chan struct{}
}

// Start validates cfg, starts the engine's child process (with
// cfg.Process), waits until its /health answers 200 (up to StartTimeout),
// reads its /v1/models and measures its per-token time. The returned server
// is not serving yet: call Serve. Errors wrap ErrBadConfig or ErrBackend.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u, _ := url.Parse(strings.TrimSuffix(cfg.BackendURL, "/"))
	s := &Server{cfg: cfg, log: logger, backend: u, http: &http.Client{Timeout: 5 * time.Minute}, changedLocked: make(chan struct{})}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		FlushInterval: -1, // stream server-sent events as they come
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("full-range replica: the engine at %s failed: %v", cfg.BackendURL, err))
		},
	}
	if cfg.Process != "" {
		if err := s.startChild(); err != nil {
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := s.waitHealthy(ctx); err != nil {
		return nil, err
	}
	model, err := s.backendModel(ctx)
	if err != nil {
		return nil, err
	}
	name := cfg.ModelName
	if name == "" {
		name = model
	}
	tau, tauI, err := s.measure(ctx, model)
	if err != nil {
		return nil, err
	}
	s.infoLocked = api.Info{
		ServerInfo: swarm.ServerInfo{
			Model: name, Span: swarm.Span{Start: 0, End: cfg.Blocks}, ModelBlocks: cfg.Blocks, FullRange: true,
			Tau: tau, TauI: tauI, Provider: cfg.Provider, Sessions: []swarm.SessionLoad{}, ProtocolVersion: swarm.ProtocolVersion,
		},
		State: api.StateServing, MaxLength: cfg.MaxLength,
		Measurement:  api.Measurement{Hardware: "the engine at " + cfg.BackendURL, MeasuredAt: time.Now().UTC().Format(time.RFC3339)},
		BackendModel: model, Backend: cfg.BackendURL, ModelInfo: cfg.Model,
	}
	s.log.Info("engine ready", "backend", cfg.BackendURL, "backend_model", model, "model", name,
		"per_token", time.Duration(tau*float64(cfg.Blocks)*float64(time.Second)), "tau", tau)
	ok = true
	return s, nil
}

// startChild runs cfg.Process with /bin/sh -c in its own process group.
func (s *Server) startChild() error {
	cmd := exec.Command("/bin/sh", "-c", s.cfg.Process)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: starting --process %q: %w", ErrBackend, s.cfg.Process, err)
	}
	s.child, s.childDone = cmd, make(chan struct{})
	go func() {
		s.childErr = cmd.Wait()
		close(s.childDone)
	}()
	s.log.Info("engine started", "pid", cmd.Process.Pid, "command", s.cfg.Process)
	return nil
}

// childExited returns a channel closed when the child exits (never, without
// a child).
func (s *Server) childExited() <-chan struct{} {
	if s.child == nil {
		return nil
	}
	return s.childDone
}

// waitHealthy polls /health until it answers 200.
func (s *Server) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = s.health(ctx); last == nil {
			return nil
		}
		select {
		case <-s.childExited():
			return fmt.Errorf("%w: the engine process exited before it was healthy: %v", ErrBackend, s.childErr)
		case <-ctx.Done():
			return fmt.Errorf("%w: no healthy %s/health within %v: %w", ErrBackend, s.cfg.BackendURL, s.cfg.StartTimeout, last)
		case <-tick.C:
		}
	}
}

// get does one GET of a backend path and returns the body of a 200.
func (s *Server) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.backend.String()+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %s", path, resp.Status)
	}
	return body, nil
}

func (s *Server) health(ctx context.Context) error {
	_, err := s.get(ctx, "/health")
	return err
}

// backendModel reads the engine's first model id from /v1/models.
func (s *Server) backendModel(ctx context.Context) (string, error) {
	body, err := s.get(ctx, "/v1/models")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBackend, err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", fmt.Errorf("%w: %s/v1/models lists no model (%q)", ErrBackend, s.cfg.BackendURL, body)
	}
	return list.Data[0].ID, nil
}

// completion times one greedy completion of maxTokens tokens and returns
// its duration and the tokens the engine reports generating.
func (s *Server) completion(ctx context.Context, model string, maxTokens int) (time.Duration, int, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": maxTokens,
		"temperature": 0, "ignore_eos": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.backend.String()+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: timing a completion: %w", ErrBackend, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	d := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%w: timing a completion: HTTP %s: %s (%v)", ErrBackend, resp.Status, raw, err)
	}
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, 0, fmt.Errorf("%w: timing a completion: bad JSON: %w", ErrBackend, err)
	}
	return d, out.Usage.CompletionTokens, nil
}

// measure estimates the engine's decode time per token from the
// difference of a 1-token and an N-token greedy completion (the request
// overhead and prefill cancel), median of three, and returns it per block,
// tau_j = per-token / L (paper 003 Sec. 2.2, as the engine exposes it), and
// the 1-token completion per block as the prefill intercept of tauI.
func (s *Server) measure(ctx context.Context, model string) (float64, swarm.PrefillFit, error) {
	n := s.cfg.MeasureTokens
	if _, _, err := s.completion(ctx, model, 1); err != nil { // warm-up
		return 0, swarm.PrefillFit{}, err
	}
	var per, first []float64
	for range 3 {
		t1, _, err := s.completion(ctx, model, 1)
		if err != nil {
			return 0, swarm.PrefillFit{}, err
		}
		tn, got, err := s.completion(ctx, model, n)
		if err != nil {
			return 0, swarm.PrefillFit{}, err
		}
		if got < 2 {
			got = n // an engine that reports no usage generated n (ignore_eos)
		}
		per = append(per, max((tn-t1).Seconds(), 0)/float64(got-1))
		first = append(first, t1.Seconds())
	}
	slices.Sort(per)
	slices.Sort(first)
	L := float64(s.cfg.Blocks)
	tau := max(per[1], 1e-9) / L
	return tau, swarm.PrefillFit{Intercept: first[1] / L}, nil
}

// Info returns the advertised document.
func (s *Server) Info() api.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked
}

// setState records the engine's state and logs changes.
func (s *Server) setState(state string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.infoLocked.State == state {
		return
	}
	s.infoLocked.State = state
	close(s.changedLocked)
	s.changedLocked = make(chan struct{})
	if err != nil {
		s.log.Warn("engine unhealthy: advertising "+state, "err", err)
	} else {
		s.log.Info("engine healthy again: advertising " + state)
	}
}

// Changed returns a channel closed at the next change of the advertised
// state (for publishing it to a registry).
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changedLocked
}

// Handler serves GET /v1/info, GET /health and forwards /v1/* to the
// engine.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.InfoPath, func(w http.ResponseWriter, _ *http.Request) {
		b, err := json.Marshal(s.Info())
		if err != nil {
			writeError(w, http.StatusInternalServerError, "encoding the info document: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	mux.HandleFunc(api.InferencePath, func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "a full-range replica takes text through its OpenAI-compatible API (/v1/completions), not hidden states")
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if st := s.Info().State; st != api.StateServing {
			writeError(w, http.StatusServiceUnavailable, "the engine is "+st)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.Handle("/v1/", s.proxy)
	return mux
}

// writeError answers OpenAI's error JSON.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": nil}})
}

// Serve serves Handler on ln, advertising ln's address as the endpoint,
// and polls the engine, until ctx ends (it returns nil) or the engine's
// child process exits (an error wrapping ErrBackend).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ep := "http://" + ln.Addr().String()
	s.mu.Lock()
	s.infoLocked.ID, s.infoLocked.Endpoints = ep, []string{ep}
	s.mu.Unlock()
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	tick := time.NewTicker(s.cfg.HealthInterval)
	defer tick.Stop()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("fullrange: serving: %w", err)
		case <-s.childExited():
			return fmt.Errorf("%w: the engine process exited: %v", ErrBackend, s.childErr)
		case <-tick.C:
			err := s.health(ctx)
			if err == nil {
				_, err = s.backendModel(ctx)
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				s.setState(StateDown, err)
			} else {
				s.setState(api.StateServing, nil)
			}
		}
	}
}

// Close stops the engine's child process group (SIGTERM, then SIGKILL
// after 10 s) and waits for it. It is idempotent.
func (s *Server) Close() error {
	if s.child == nil {
		return nil
	}
	select {
	case <-s.childDone:
		return nil
	default:
	}
	terminateGroup(s.child.Process)
	select {
	case <-s.childDone:
	case <-time.After(10 * time.Second):
		killGroup(s.child.Process)
		<-s.childDone
	}
	if s.childErr != nil && !errors.As(s.childErr, new(*exec.ExitError)) {
		return s.childErr
	}
	return nil
}
