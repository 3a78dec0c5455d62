// Package parity checks a blocks.Backend against a reference backend
// (normally the CPU backend) on the same model: the GPU issue's acceptance
// harness behind `swarm doctor`.
//
// Compare builds both backends' engines over a model's whole span and runs
// the same seeded pseudo-random hidden states through each (a prefill, then
// single-token decode steps, every step fed the same fresh inputs so errors
// do not compound), recording the largest absolute and relative difference
// per step against a bound that depends on the precision each side keeps
// (DefaultBound). It also requires the candidate to be deterministic where
// the Engine contract says it is: a truncate-and-replay of the last
// positions reproduces the first run bit for bit, and a BatchEngine's
// ForwardBatch gives each session bit for bit what it computes alone.
// Greedy runs greedy generation end to end on both backends (blocks'
// generation code, the path of `swarm generate --local`) and requires the
// same token ids. SynthModel writes the tiny random-weight models the
// doctor compares on, for every architecture and weight dtype.
//
// This package must never import server/, client/, registry/, cmd/,
// placement/, routing/, sim/ or any networking package: it runs engines in
// this process and nothing else.
package parity
