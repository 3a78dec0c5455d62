// Package wire is the session wire protocol between a client and a server
// (DESIGN.md "Wire protocol"): versioned binary frames that open a session on
// a span of blocks, stream hidden states through it step by step, and close
// it. It is pure: it reads and writes io.Reader/io.Writer and []byte only, so
// the same frames travel as websocket binary messages (one frame per message,
// Marshal/Unmarshal) or over any reliable byte stream such as a libp2p stream
// (Encode/Decode).
//
// This package must never import any package of this repository other than
// swarm, and never net, net/http, os or time.
//
// # Conversation
//
//	client                                   server
//	Open{model, span, max_length, dtype} ->
//	                                      <- Waiting{position, estimated wait}   (zero or more)
//	                                      <- Granted{session id, cache bytes}    (or Error)
//	Step{session, position, hidden}      ->
//	                                      <- Result{session, position, compute seconds, hidden}
//	...
//	Close{session}                       ->
//	                                      <- Closed{session}
//
// Any request may instead be answered by an Error frame carrying a Code. A
// malformed frame (Decode returns an error wrapping ErrBadFrame or
// ErrVersion) leaves the stream at an unspecified position: the receiver
// answers with an Error frame (CodeOf maps the error to its code) and closes
// the connection.
//
// # Byte layout (protocol version 1)
//
// All integers are little-endian and unsigned; f64 is an IEEE 754 binary64
// stored as its bits (u64). One frame is a 12-byte header followed by the
// payload. The header layout is frozen for all versions, so a receiver can
// always read the version of a frame it cannot understand:
//
//	offset size field
//	0      4    magic, the ASCII bytes "SWRM" (53 57 52 4d)
//	4      2    version u16 (swarm.ProtocolVersion)
//	6      1    type u8 (TypeOpen=1 ... TypeError=8)
//	7      1    flags u8, reserved: 0 in version 1
//	8      4    payload length u32, in bytes
//
// Payload building blocks:
//
//	str     u16 byte length, then that many bytes of UTF-8 (no terminator)
//	tensor  dtype u8 (1=f32, 2=f16, 3=bf16: swarm.DType), n_tokens u32,
//	        d_model u32, then n_tokens*d_model elements row-major, each 4
//	        (f32) or 2 (f16, bf16) bytes little-endian: hidden states
//	        [n_tokens, d_model]
//
// Payloads, field after field with no padding:
//
//	1 Open     session_id str (empty: the server assigns one), model str,
//	           span_start u32, span_end u32 (0-based half-open span of blocks
//	           to process), max_length u32 (tokens), dtype u8 (hidden-state
//	           dtype proposed for the session), alloc_timeout f64 (seconds
//	           the client lets the server wait for cache room)
//	2 Granted  session_id str, dtype u8 (hidden-state dtype of the session),
//	           cache_bytes u64 (attention-cache bytes reserved), waited f64
//	           (seconds spent waiting for room)
//	3 Waiting  session_id str, position u32 (waiters ahead; 0 = next),
//	           queue_len u32 (waiters in all), estimated_wait f64 (seconds)
//	4 Step     session_id str, position u32 (position of the first token),
//	           hidden tensor
//	5 Result   session_id str, position u32, compute f64 (server compute
//	           seconds for this step), hidden tensor
//	6 Close    session_id str
//	7 Closed   session_id str
//	8 Error    session_id str (empty: about the connection), code u16
//	           (Code), message str
//
// Decoding is strict so that every accepted frame re-encodes to the same
// bytes: the payload must be consumed exactly, strings must be valid UTF-8
// (session ids and model names at most MaxNameLen bytes), f64 fields finite
// and >= 0, spans non-empty, tensors non-empty with a wire dtype. A payload
// longer than the receiver's limit is rejected from the header alone, before
// anything is allocated (ErrTooLarge).
package wire
