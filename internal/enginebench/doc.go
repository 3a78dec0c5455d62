// Package enginebench measures this repository's engine on a whole model
// in one process, the path of `swarm generate --local`, and optionally
// llama.cpp on the same file, side by side: the library behind `swarm
// bench local` (issue 12, "Done when" 2). Each round loads the model,
// times a prefill of a P-token prompt (one Forward call, up to the greedy
// choice of the next token) and G greedy single-token decode steps; with
// llama.cpp the rounds alternate (ours, theirs, ours, ...) so both see the
// same machine, and medians are reported with the ratio ours/theirs and
// the fraction of the measured read bandwidth (internal/membw) each
// engine's decode reaches.
//
// It runs the model in this process and llama.cpp in a child node
// process; this package must never import server, registry, node, sim,
// ingress or cmd.
package enginebench
