// Package petals is the PETALS-compatible websocket front end of an
// ingress: /api/v2/generate, the protocol of chat.petals.dev's
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
// This package must never import server/, registry/, sim/ or cmd/; it
// reaches the swarm only through the ingress package.
package petals
