// Package petals is the PETALS-compatible front end of an ingress: the
// websocket /api/v2/generate, the protocol of chat.petals.dev's
// websocket_api.py (https://github.com/petals-infra/chat.petals.dev), so
// that existing PETALS chat clients work against a swarm ingress. JSON
// messages over one websocket (gorilla/websocket):
//
//	-> {"type": "open_inference_session", "model": M, "max_length": N}
//	<- {"ok": true}
//	-> {"type": "generate", "inputs": TEXT, "max_new_tokens": K, "do_sample": 0|1,
//	    "temperature": T, "top_p": P, "top_k": K, "repetition_penalty": R,
//	    "stop_sequence": S, "extra_stop_sequences": [...]}
//	<- {"ok": true, "outputs": TEXT, "stop": true|false, "token_count": n} (one or more)
//	<- {"ok": false, "traceback": MESSAGE} (then the connection closes)
//
// The session (and its attention caches along the chain) lives as long as
// the connection; each generate continues it.
//
// It also answers chat.petals.dev's HTTP API (http_api.py), one
// generation per request, its fields as JSON or form values:
//
//	POST /api/v1/generate  model, inputs, max_new_tokens | max_length, do_sample,
//	                       temperature, top_k, top_p, repetition_penalty (seed)
//	<- {"ok": true, "outputs": TEXT} or {"ok": false, "traceback": MESSAGE}
//
// Its inference sessions (session_id) are refused: they are the
// websocket's.
//
// This package must never import server/, registry/, sim/ or cmd/; it
// reaches the swarm only through the ingress package.
package petals
