package ingress

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimitError is returned (from Authenticate) for a request over its
// account's rate limit; it matches ErrRateLimited. The front ends answer
// 429 with a Retry-After header.
type RateLimitError struct {
	// Key is what the limit applies to: "key NAME" or "address IP".
	Key string
	// RetryAfter is how long until the request would be allowed.
	RetryAfter time.Duration
	// Rate and Burst are the limit (requests per second, bucket size).
	Rate  float64
	Burst int
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%v: %s is over its limit of %g requests per second (burst %d); retry in %v",
		ErrRateLimited, e.Key, e.Rate, e.Burst, e.RetryAfter.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// RetryAfterSeconds is the Retry-After header value: whole seconds, at
// least 1 (RFC 9110 Sec. 10.2.3).
func (e *RateLimitError) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// maxLimiters bounds the rate limiters kept (one per key or address):
// past it, those untouched for idleLimiter are dropped, so that requests
// from many addresses cannot grow the table without bound. A dropped
// limiter was idle long enough to have refilled its whole bucket, so
// forgetting it changes nothing.
const (
	maxLimiters = 10000
	idleLimiter = time.Minute
)

// limiters is a token bucket per account (API key name) or, for anonymous
// requests, per client IP address. Safe for concurrent use.
type limiters struct {
	rate  rate.Limit // 0: unlimited
	burst int
	now   func() time.Time

	mu sync.Mutex
	// Guarded by mu.
	byKeyLocked map[string]*limiter
}

type limiter struct {
	l    *rate.Limiter
	used time.Time
}

func newLimiters(perSecond float64, burst int, now func() time.Time) *limiters {
	return &limiters{rate: rate.Limit(perSecond), burst: burst, now: now, byKeyLocked: map[string]*limiter{}}
}

// allow takes one request of key from its bucket, or returns a
// *RateLimitError saying when to retry.
func (ls *limiters) allow(key string) error {
	if ls.rate <= 0 {
		return nil
	}
	now := ls.now()
	ls.mu.Lock()
	l := ls.byKeyLocked[key]
	if l == nil {
		if len(ls.byKeyLocked) >= maxLimiters {
			for k, old := range ls.byKeyLocked {
				if now.Sub(old.used) > idleLimiter {
					delete(ls.byKeyLocked, k)
				}
			}
		}
		l = &limiter{l: rate.NewLimiter(ls.rate, ls.burst)}
		ls.byKeyLocked[key] = l
	}
	l.used = now
	ok := l.l.AllowN(now, 1) // a refused request takes no token
	tokens := l.l.TokensAt(now)
	ls.mu.Unlock()
	if ok {
		return nil
	}
	wait := time.Duration((1 - tokens) / float64(ls.rate) * float64(time.Second))
	return &RateLimitError{Key: key, RetryAfter: wait, Rate: float64(ls.rate), Burst: ls.burst}
}

// limitKey is what r's rate limit applies to: its API key's name, or for
// anonymous requests its client's IP address.
func limitKey(account string, r *http.Request) string {
	if account != Anonymous {
		return "key " + account
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// RetryAfter is the Retry-After header (whole seconds) a front end sends
// with err, 0 for none: the wait of a *RateLimitError, and 1 s for
// ErrNoRoute (503: no server covers the model now; servers that join or
// come back are probed within the gateway's refresh interval).
func RetryAfter(err error) int {
	var rl *RateLimitError
	switch {
	case errors.As(err, &rl):
		return rl.RetryAfterSeconds()
	case errors.Is(err, ErrNoRoute):
		return 1
	}
	return 0
}

// AuthStatus is the HTTP status of an Authenticate error (401, or 429 for
// a rate limit); it sets the Retry-After header of a 429 on h.
func AuthStatus(err error, h http.Header) int {
	if after := RetryAfter(err); after > 0 && errors.Is(err, ErrRateLimited) {
		h.Set("Retry-After", strconv.Itoa(after))
		return http.StatusTooManyRequests
	}
	return http.StatusUnauthorized
}
