// Package openai is the OpenAI-compatible HTTP front end of an ingress:
// GET /v1/models, GET /v1/models/{model}, POST /v1/completions and POST
// /v1/chat/completions, with and without server-sent-event streaming
// (https://platform.openai.com/docs/api-reference), over an
// ingress.Gateway. It renders chat templates from model metadata as
// transformers' apply_chat_template does (Jinja2 with gonja, plus the
// extension layer of jinja*.go; chat_oracle_test.go holds it byte-identical
// to @huggingface/jinja on the Llama 3, Qwen3 and Gemma 3 templates) and
// maps errors to OpenAI's error JSON in one function (unknown paths are
// 404s, other methods 405s, and a parameter it does not implement is a 400
// naming it, never silently ignored). response_format {"type":
// "json_object"} is served by constrained decoding: tokens that cannot
// continue a JSON object are masked (jsonmode.go).
//
// This package must never import server/, registry/, sim/ or cmd/; it
// reaches the swarm only through the ingress package.
package openai
