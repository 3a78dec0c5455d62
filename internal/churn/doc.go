// Package churn is the churn harness behind `swarm bench churn`: it starts
// a real swarm on loopback (N `swarm serve --blocks auto` processes of this
// binary and a `swarm proxy` joined to them), runs concurrent streams of
// greedy completions through the proxy's OpenAI-compatible API for a
// no-churn phase, then for a churn phase of the same length during which a
// random server is killed (SIGKILL), stopped (SIGSTOP, later resumed or
// killed) or terminated (SIGTERM) every kill interval (jittered up to
// 1.25x) and a replacement server joins. A server is only taken away when
// the running others still cover every block, so the swarm never loses
// coverage on purpose.
//
// Correctness is judged against the swarm itself at rest: every greedy
// output must equal the output of the same prompt in the no-churn phase,
// whose outputs must first agree among themselves. The Report counts
// requests, failures and wrong outputs and gives each phase's latency
// percentiles (seconds), so that churn's cost is the ratio of the two p99s
// measured in one run.
//
// Optional phases between the two attack the swarm: an idle-session
// attacker (IdleOpens) and a black hole (BlackHole), a fake server that
// joins the registry with its own key, as any Sybil can.
//
// It drives the swarm from outside, as an operator or an attacker would:
// processes, HTTP, the session protocol (api, swarm/wire) and, for the
// black hole, a registry member of its own (node, registry). This package
// must never import server, client, the ingress gateway's front ends, sim
// or cmd.
package churn
