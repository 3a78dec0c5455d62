// openai_schema.mjs: the official `openai` npm client against a swarm
// ingress, for the parts of the API beyond plain text (issue 18): it
// retrieves the model, asks for structured output (response_format
// json_schema, strict) with SEEDS seeds at temperature 1 (one of them
// streamed), generates greedily with and without presence_penalty,
// frequency_penalty and logit_bias, and sends CORS requests (a preflight
// from an allowed origin, one from another origin, and a cross-origin
// POST), then prints one JSON object with what it received; the Go test
// (cmd/swarm/proxy_schema_e2e_test.go) validates the documents against the
// schema and asserts on the rest.
//
// Environment: SWARM_PROXY_URL (http://HOST:PORT, required), SWARM_MODEL
// (required), SWARM_SCHEMA (the JSON schema, required), SEEDS (default
// 20), MAX_TOKENS (default 160), CORS_ORIGIN (the allowed origin),
// BIAS_TOKEN (a token id that logit_bias +100 forces).
import OpenAI from "openai";

const base = process.env.SWARM_PROXY_URL;
const model = process.env.SWARM_MODEL;
const schemaText = process.env.SWARM_SCHEMA;
if (!base || !model || !schemaText) {
  console.error("openai_schema: SWARM_PROXY_URL, SWARM_MODEL and SWARM_SCHEMA are required");
  process.exit(2);
}
const schema = JSON.parse(schemaText);
const seeds = Number(process.env.SEEDS ?? 20);
const maxTokens = Number(process.env.MAX_TOKENS ?? 160);
const origin = process.env.CORS_ORIGIN ?? "http://app.example";
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0});
const out = {};

out.retrieved = await client.models.retrieve(model);

const format = {type: "json_schema", json_schema: {name: "answer", strict: true, schema}};
const messages = [{role: "user", content: "Answer in JSON."}];
out.documents = [];
for (let seed = 0; seed < seeds; seed++) {
  const r = await client.chat.completions.create({
    model, messages, temperature: 1, seed, max_tokens: maxTokens, response_format: format,
  });
  const text = r.choices[0].message.content;
  let parsed = true;
  try {
    JSON.parse(text);
  } catch {
    parsed = false;
  }
  out.documents.push({seed, text, parsed, finish_reason: r.choices[0].finish_reason,
    completion_tokens: r.usage.completion_tokens, system_fingerprint: r.system_fingerprint});
}
const stream = await client.chat.completions.create({
  model, messages, temperature: 1, seed: 1000, max_tokens: maxTokens, response_format: format, stream: true,
});
out.streamed = {text: "", fingerprints: new Set()};
for await (const chunk of stream) {
  out.streamed.fingerprints.add(chunk.system_fingerprint);
  for (const c of chunk.choices) {
    if (c.delta.content) out.streamed.text += c.delta.content;
  }
}
out.streamed.fingerprints = [...out.streamed.fingerprints];

// Greedy completions: the penalties and the bias must change them.
async function greedy(extra) {
  const r = await client.completions.create({model, prompt: "the cat", max_tokens: 40, temperature: 0, ...extra});
  return r.choices[0].text;
}
out.plain = await greedy({});
out.plainAgain = await greedy({});
out.presence = await greedy({presence_penalty: 2});
out.frequency = await greedy({frequency_penalty: 2});
out.negativeFrequency = await greedy({frequency_penalty: -2});
out.bias = await greedy({logit_bias: {[process.env.BIAS_TOKEN ?? "3"]: 100}});

// CORS: a browser's preflight, then what it sends.
async function preflight(from) {
  const r = await fetch(`${base}/v1/chat/completions`, {method: "OPTIONS", headers: {
    Origin: from, "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type,x-stainless-os",
  }});
  return {status: r.status, allowOrigin: r.headers.get("access-control-allow-origin"),
    allowMethods: r.headers.get("access-control-allow-methods"),
    allowHeaders: r.headers.get("access-control-allow-headers")};
}
out.preflight = await preflight(origin);
out.preflightOther = await preflight("http://evil.example");
const post = await fetch(`${base}/v1/models/${encodeURIComponent(model)}`, {headers: {Origin: origin}});
out.crossOrigin = {status: post.status, allowOrigin: post.headers.get("access-control-allow-origin")};

console.log(JSON.stringify(out));
