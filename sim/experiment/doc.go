// Package experiment runs the simulator's experiments, the evaluation of
// paper 003 (Sun, He, Ji, Parag 2025, Sec. 4 and App. C) behind `swarm sim`
// and `swarm sim sweep`: it validates the options of a scenario (the
// paper's clustered deployment, or servers scattered over a Repetita or
// Topology Zoo file), picks the calibration, runs the Monte Carlo runs on
// goroutines and averages them (with 95% confidence intervals), sweeps one
// parameter (Figs. 6-9), fills the paper's deployments from presets and
// warns when a fleet is not the paper's, runs every cell of Tables 4 and 5
// (RunTables), looks up the paper's numbers for the same setting, and
// writes tables, versioned JSON (SchemaVersion) and plots. Fleet and model
// files are loaded by the caller (this package reads neither format).
//
// Every run is deterministic, with its own PCG stream (seed, run index), so
// results never depend on how the runs are scheduled; only the measured
// wall time of the placement and routing calls (Result.Runtime) varies.
//
// Unlike sim, which must stay a pure function of its inputs, this package
// may start goroutines, read topology files and write plot files. From
// this repository it imports only sim and topologies (never server, client,
// registry, node, ingress, blocks or cmd), and it must never depend on the
// network (net, net/http, libp2p).
package experiment
