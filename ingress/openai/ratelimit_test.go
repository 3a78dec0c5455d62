package openai_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/ingress"
	"github.com/swarmllm/swarm/ingress/ingresstest"
	"github.com/swarmllm/swarm/ingress/openai"
)

// fakeClock is a settable clock for the gateway's Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRateLimit: with a limit of 1 request per second and a burst of 2,
// each API key gets two requests at once, then 429 rate_limit_exceeded
// with Retry-After: 1 (OpenAI's answer), until a second passes; another
// key is not affected. Without keys the limit is per client address.
func TestRateLimit(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	keys, err := ingress.ParseKeys(strings.NewReader("alice-key-0001 alice\nbob-key-00002 bob\n"))
	require.NoError(t, err)
	limited := func(keys *ingress.Keys) http.Handler {
		gw := ingresstest.Gateway(t, []string{"127.0.0.1:1"}, nil, func(c *ingress.Config) {
			c.Keys, c.RateLimit, c.RateBurst, c.Now = keys, 1, 2, clock.now
		})
		h, err := openai.New(gw)
		require.NoError(t, err)
		return h
	}
	get := func(h http.Handler, key, remote string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		r.RemoteAddr = remote
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	refused := func(rec *httptest.ResponseRecorder, who string) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, rec.Code)
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		var e openai.ErrorBody
		require.NoError(t, json.NewDecoder(rec.Body).Decode(&e))
		require.Equal(t, "rate_limit_exceeded", *e.Error.Code)
		require.Equal(t, "requests", e.Error.Type)
		require.Contains(t, e.Error.Message, who+" is over its limit of 1 requests per second (burst 2)")
	}

	h := limited(keys)
	for range 2 {
		require.Equal(t, http.StatusOK, get(h, "alice-key-0001", "10.0.0.1:1").Code)
	}
	refused(get(h, "alice-key-0001", "10.0.0.9:1"), "key alice")
	require.Equal(t, http.StatusOK, get(h, "bob-key-00002", "10.0.0.1:1").Code, "bob has his own bucket")
	require.Equal(t, http.StatusUnauthorized, get(h, "", "10.0.0.1:1").Code, "no key: 401, not 429")
	clock.add(999 * time.Millisecond)
	refused(get(h, "alice-key-0001", "10.0.0.1:1"), "key alice")
	clock.add(time.Millisecond)
	require.Equal(t, http.StatusOK, get(h, "alice-key-0001", "10.0.0.1:1").Code, "one token back after 1 s")
	refused(get(h, "alice-key-0001", "10.0.0.1:1"), "key alice")

	anon := limited(nil)
	for range 2 {
		require.Equal(t, http.StatusOK, get(anon, "", "10.0.0.1:5000").Code)
	}
	refused(get(anon, "", "10.0.0.1:6000"), "address 10.0.0.1")
	require.Equal(t, http.StatusOK, get(anon, "", "10.0.0.2:5000").Code, "another address")
}

// TestRateLimitConfig: a negative or infinite rate, or a rate without a
// burst, is refused with ErrBadOption naming it.
func TestRateLimitConfig(t *testing.T) {
	head := ingresstest.Head(t)
	src, err := ingress.NewStatic([]string{"127.0.0.1:1"}, nil)
	require.NoError(t, err)
	for _, tt := range []struct {
		rate  float64
		burst int
		want  string
	}{
		{-1, 1, "rate limit -1 requests per second"},
		{float64(time.Hour), 0, "rate burst 0, want >= 1"},
	} {
		cfg := ingress.DefaultConfig()
		cfg.Models = []ingress.Model{{Name: head.Info().Name, Head: head}}
		cfg.Source, cfg.RateLimit, cfg.RateBurst = src, tt.rate, tt.burst
		_, err := ingress.New(cfg)
		require.ErrorIs(t, err, ingress.ErrBadOption)
		require.ErrorContains(t, err, tt.want)
	}
}
