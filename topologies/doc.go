// Package topologies loads the network topologies the simulator places
// servers and clients on: Internet Topology Zoo GraphML files
// (http://www.topology-zoo.org, GraphML spec http://graphml.graphdrawing.org),
// Repetita ".graph" files (Gay, Schaus, Vissicchio, arXiv:1710.08665), and the
// clustered configuration of paper 003, Table 2. It turns a topology into a
// round-trip-time matrix from delay-shortest paths (paper 003 Sec. 4.1:
// "We compute the RTTs between nodes according to the cumulative delays along
// the delay-based shortest paths").
//
// Loaders never drop or fix data silently: duplicate links, self-loops,
// nodes without coordinates and one-way edges are handled as documented on
// each loader and listed in Topology.Report.
//
// Times are float64 seconds, bandwidths float64 bits per second.
//
// This package must never import other packages of this repository (it is
// pure data handling), nor net, time or anything that starts goroutines.
package topologies
