// Package serverbench measures a server's decode throughput under
// concurrency, the library behind `swarm bench server`: it runs one server
// in this process and N client sessions against it over loopback
// websockets, each sending the same number of single-token decode steps at
// the same time, and reports the aggregate tokens per second, the time per
// output token of a session (TPOT) and the GFLOP/s that throughput is. It
// also compares a long prefill sent as one step (the server's batched
// path, chunked) with the same prompt sent token by token (the decode
// path).
//
// It talks to the server as a client does, over the wire protocol; this
// package must never import client, registry, placement, sim or cmd.
package serverbench
