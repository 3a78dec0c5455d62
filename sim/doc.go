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
// they interact through the cache memory of the servers, which makes later
// sessions wait (WS-RR's wait estimate, eq. 20) or retry with exponential
// back-off (PETALS), and, unless Fleet.ServerModel is ServerIndependent
// (the paper's assumption), through the servers' compute: a serial server
// steps one session at a time, a batched one all at once at
// swarm.BatchFactor's price, and the decode tokens of every running session
// slow down or speed up as sessions start and end.
//
// The default model is mechanism-only: eq. (1), cache memory, waiting
// and PETALS' retries. The authors' simulator also adds unexplained
// per-session constants to every first token (an "allocation delay" of
// 60 s for the proposed algorithm and 250 s or 350 s for the PETALS-based
// ones, and an initial delay of 100 ms or 70 ms) and rounds waits up to
// PETALS back-off steps; Fleet.Calibration = MATLABCalibration(...) adds
// exactly those, opt-in, for comparisons with the paper's MATLAB columns.
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
