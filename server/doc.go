// Package server hosts a span of a model's transformer blocks for many
// concurrent sessions (DESIGN.md "server/"): it loads only the span's
// weights (blocks.Model.LoadSpan), measures its own decode time per block
// tau and prefill time per block tauI(l) at start-up (cached per model, span
// and hardware), admits sessions by the memory model (2) of paper 003 via
// server/admission (a session that does not fit waits, FIFO, up to the
// client's alloc_timeout, and is told so with Waiting frames), runs the
// steps of all sessions off the connections' read loops through one step
// loop that batches them into one pass over the weights (stepper.go),
// advertises itself on
// GET /v1/info, and shuts down gracefully: stop admitting, let open sessions
// finish for a drain timeout, then tell the rest to fail over.
//
// Frames arrive over any api.FrameConn: Handler upgrades /v1/inference to a
// websocket, ServeConn takes any other transport (a libp2p stream).
//
// This package must never import client/, registry/, placement/, sim/ or
// cmd/: it serves; others route and drive.
package server
