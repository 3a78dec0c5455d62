package server

import (
	"fmt"
	"net"
	"sync"
)

// peerKey names the remote peer of a connection for the per-peer session
// cap: the host of a HOST:PORT address (so every connection from one IP
// address counts together), else the whole address (a libp2p peer id).
func peerKey(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// peerSessions counts the sessions each remote peer holds (open or waiting
// for admission) against Config.MaxSessionsPerPeer. It is safe for
// concurrent use.
type peerSessions struct {
	limit int // 0: no cap

	mu sync.Mutex
	// countLocked maps peerKey to sessions held; absent means 0. Guarded by mu.
	countLocked map[string]int
}

func newPeerSessions(limit int) *peerSessions {
	return &peerSessions{limit: limit, countLocked: map[string]int{}}
}

// acquire counts one more session of peer, or returns an error wrapping
// errTooMany when the peer is at the cap. The returned release (idempotent)
// gives the slot back.
func (p *peerSessions) acquire(peer string) (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.countLocked[peer]; p.limit > 0 && n >= p.limit {
		return nil, fmt.Errorf("%w: peer %s already holds %d sessions, the most this server allows one peer (--max-sessions-per-peer)", errTooMany, peer, n)
	}
	p.countLocked[peer]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.countLocked[peer]--; p.countLocked[peer] <= 0 {
				delete(p.countLocked, peer)
			}
		})
	}, nil
}

// held returns the sessions peer holds.
func (p *peerSessions) held(peer string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.countLocked[peer]
}
