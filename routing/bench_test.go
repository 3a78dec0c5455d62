package routing_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/routing"
	"github.com/swarmllm/swarm/swarm"
)

// benchServers is a 60-server snapshot over 70 blocks: 12 servers hosting
// 41 blocks and 48 hosting 3 or 4, at spans laid out like a CG-BP
// placement, each with 0-9 open sessions.
func benchServers() ([]routing.Server, routing.Request) {
	rng := rand.New(rand.NewPCG(60, 70))
	req := routing.Request{Blocks: 70, MaxLength: 128, Now: 100}
	var servers []routing.Server
	for j := range 60 {
		m := 3 + rng.IntN(2)
		s := routing.Server{Name: fmt.Sprintf("s%d", j), Tau: 0.0162488, RTT: 0.005 + 0.1*rng.Float64(), CacheSlots: 100}
		if j%5 == 0 {
			m = 41
			s.Tau, s.CacheSlots = 0.0032197, 2000
		}
		start := (j * 7) % (70 - m + 1)
		s.Span = swarm.Span{Start: start, End: start + m}
		for range rng.IntN(10) {
			s.Sessions = append(s.Sessions, swarm.SessionLoad{Remaining: 60 * rng.Float64(), Caches: 1 + rng.IntN(m)})
		}
		s.AsOf = req.Now - rng.Float64()
		servers = append(servers, s)
	}
	return servers, req
}

// BenchmarkWSRR times routing one session with WS-RR over 60 servers.
func BenchmarkWSRR(b *testing.B) {
	servers, req := benchServers()
	_, err := routing.WSRR(servers, req)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = routing.WSRR(servers, req)
	}
}

// BenchmarkOptimizedRR times the exact (21) router on the same snapshot.
func BenchmarkOptimizedRR(b *testing.B) {
	servers, req := benchServers()
	_, err := routing.OptimizedRR(servers, req)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = routing.OptimizedRR(servers, req)
	}
}
