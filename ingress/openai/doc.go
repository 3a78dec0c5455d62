// Package openai is the OpenAI-compatible HTTP front end of an ingress:
// GET /v1/models, POST /v1/completions and POST /v1/chat/completions, with
// and without server-sent-event streaming
// (https://platform.openai.com/docs/api-reference), over an
// ingress.Gateway. It renders chat templates from model metadata (Jinja2,
// with gonja) and maps errors to OpenAI's error JSON in one function.
//
// This package must never import server/, registry/, sim/ or cmd/; it
// reaches the swarm only through the ingress package.
package openai
