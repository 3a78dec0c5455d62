package client

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBanned marks a server left out because it failed recently (Bans).
var ErrBanned = errors.New("client: server banned after failing")

// Ban defaults: PETALS' policy (petals/client/routing/sequence_manager.py,
// ban_timeout 15 s, doubled per consecutive failure), capped.
const (
	// DefaultBanBase is the first ban of a server, seconds after it failed.
	DefaultBanBase = 15 * time.Second
	// DefaultBanMax caps a ban however often the server failed.
	DefaultBanMax = 10 * time.Minute
)

// Bans lists the servers to leave out for a while because they failed: a
// server that did not answer its info probe in time, or failed a session
// step (timeout, broken connection, internal error), is banned for Base,
// then twice as long for each further consecutive failure, up to Max. A
// session that completes its steps at a server clears its record. Banned
// servers are not probed (a black hole costs one probe timeout per ban, not
// one per request) and never routed to. Bans is safe for concurrent use; an
// ingress shares one among all its clients (WithBans).
type Bans struct {
	base, max time.Duration

	mu sync.Mutex
	// Guarded by mu: the record of each server (Endpoint.Inference).
	byServerLocked map[string]*ban
}

// ban is one server's record.
type ban struct {
	failures int       // consecutive failures
	until    time.Time // banned before this time
	cause    error     // the last failure
}

// NewBans returns an empty ban list with bans of base, doubling per
// consecutive failure up to max (both > 0; max >= base).
func NewBans(base, max time.Duration) (*Bans, error) {
	if base <= 0 || max < base {
		return nil, fmt.Errorf("%w: ban base %v and max %v, want 0 < base <= max", ErrBadOption, base, max)
	}
	return &Bans{base: base, max: max, byServerLocked: map[string]*ban{}}, nil
}

// Fail records a failure of server now and bans it: Base * 2^(n-1) for its
// n-th consecutive failure, at most Max. It returns the ban's length. A
// failure while the server is banned already (concurrent probes or
// sessions that all started before the first of them failed: one outage)
// does not count again: the ban stands and Fail returns what is left of it.
func (b *Bans) Fail(server string, cause error) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.byServerLocked[server]
	if r == nil {
		r = &ban{}
		b.byServerLocked[server] = r
	}
	if left := time.Until(r.until); left > 0 {
		return left
	}
	r.failures++
	d := b.max
	if shift := r.failures - 1; shift < 32 && b.base<<shift > 0 && b.base<<shift < b.max {
		d = b.base << shift
	}
	r.until = time.Now().Add(d)
	r.cause = cause
	return d
}

// Succeed clears server's record: its next failure is banned for Base again.
func (b *Bans) Succeed(server string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byServerLocked, server)
}

// Banned returns nil when server may be used now, else an error wrapping
// ErrBanned that says until when and why.
func (b *Bans) Banned(server string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.byServerLocked[server]
	if r == nil {
		return nil
	}
	left := time.Until(r.until)
	if left <= 0 {
		return nil
	}
	return fmt.Errorf("%w: %d time(s) in a row, for %v more; last: %w", ErrBanned, r.failures, left.Round(time.Millisecond), r.cause)
}
