// Package sim is a deterministic discrete-event simulator of a swarm serving
// sessions, after the evaluation of paper 003 (Sun, He, Ji, Parag 2025,
// ../shared/papers/003, Sec. 4 and App. C) and its authors' MATLAB
// simulator. It drives the SAME placement (placement/) and routing
// (routing/) code as the live swarm, under the paper's performance models:
// a session routed through chain p where server j processes k_j blocks
// takes
//
//	sum_j (tI_cj + k_j tauI_j(lI)) + (l_max - 1) sum_j (t_cj + k_j tau_j)   (1)
//
// once started, and holds s_c k_j bytes of attention cache on server j
// from admission to completion (2). Sessions arrive as a Poisson process;
// the only interaction between them is the cache memory of the servers,
// which makes later sessions wait (WS-RR's wait estimate, eq. 20) or retry
// with exponential back-off (PETALS).
//
// Everything is a function of its inputs: virtual time is a float64 number
// of seconds, randomness comes from a seeded *rand.Rand, there is no
// goroutine and no clock read. The caller may inject a clock (a
// func() time.Time) to measure the wall time of the placement and routing
// calls; the simulated times never depend on it.
//
// This package must never import net, os, net/http, libp2p, the server,
// client or registry packages, nor start goroutines.
package sim
