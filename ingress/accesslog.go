package ingress

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// RequestIDHeader carries a request's id: a client may send one (kept when
// it is 1 to 64 characters of [A-Za-z0-9._-]), otherwise the ingress makes
// one; the response always carries it, and the request's log line names it.
const RequestIDHeader = "X-Request-Id"

// requestRecord is what the generation of one HTTP request reports to its
// log line (Session.Generate fills it).
type requestRecord struct {
	id string
	mu sync.Mutex
	// Guarded by mu.
	modelLocked                  string
	promptLocked, completeLocked int
	ttftLocked                   time.Duration
	routeLocked                  string
}

type recordKey struct{}

// RequestID returns the id AccessLog gave the request of ctx ("" outside
// one).
func RequestID(ctx context.Context) string {
	if r, ok := ctx.Value(recordKey{}).(*requestRecord); ok {
		return r.id
	}
	return ""
}

// record adds a finished generation to the record of ctx, if any: its
// model, route kind, tokens and the first generation's time to first
// token.
func record(ctx context.Context, model, route string, res Result) {
	r, ok := ctx.Value(recordKey{}).(*requestRecord)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modelLocked, r.routeLocked = model, route
	r.promptLocked += res.PromptTokens
	r.completeLocked += res.CompletionTokens
	if r.ttftLocked == 0 {
		r.ttftLocked = res.TTFT
	}
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and Hijack (streams,
// websocket upgrades).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over (websocket upgrades, which assert
// http.Hijacker); a hijacked request logs status 101.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("ingress: the response writer cannot hijack (%T)", w.ResponseWriter)
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return hj.Hijack()
}

// Flush flushes a streamed response.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// AccessLog wraps h: every request gets an id (RequestIDHeader, also in
// the response and in RequestID of its context), and after it is served
// one Info line "request" is logged with the id, method, route (the path),
// status, the model, prompt and completion tokens and TTFT of the
// generations it ran (absent when none), and its latency (seconds). GET
// /metrics, /health and /api/v1/state polls log at Debug.
func AccessLog(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &requestRecord{id: requestID(r.Header.Get(RequestIDHeader))}
		w.Header().Set(RequestIDHeader, rec.id)
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		switch r.URL.Path {
		case "/metrics", "/health", "/api/v1/state", "/", "/dashboard/app.js", "/dashboard/style.css":
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{slog.String("id", rec.id), slog.String("method", r.Method), slog.String("route", r.URL.Path),
			slog.Int("status", status)}
		rec.mu.Lock()
		if rec.modelLocked != "" {
			attrs = append(attrs, slog.String("model", rec.modelLocked), slog.String("via", rec.routeLocked),
				slog.Int("prompt_tokens", rec.promptLocked), slog.Int("completion_tokens", rec.completeLocked),
				slog.Float64("ttft", rec.ttftLocked.Seconds()))
		}
		rec.mu.Unlock()
		attrs = append(attrs, slog.Float64("latency", time.Since(start).Seconds()))
		log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// requestID keeps a client's well-formed id, else makes a random one (16
// hex digits).
func requestID(given string) string {
	ok := len(given) > 0 && len(given) <= 64
	for i := 0; ok && i < len(given); i++ {
		c := given[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if ok {
		return given
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
