// openai_stream.mjs: the official `openai` npm client against a swarm
// ingress. It streams a completion and a chat completion (temperature 0,
// max_tokens from MAX_TOKENS, default 200, from an empty prompt / one
// empty user message), lists the models, retrieves one, and provokes a
// 404 (an unknown model, created and retrieved) and a 400 (a json_schema
// with a keyword the constraint does not implement), then prints
// one JSON object with what it received; the Go test
// (cmd/swarm/proxy_e2e_test.go) asserts on it.
//
// Environment: SWARM_PROXY_URL (http://HOST:PORT, required), SWARM_MODEL
// (default stories260K), SWARM_API_KEY (default "none"), MAX_TOKENS.
import OpenAI from "openai";

const base = process.env.SWARM_PROXY_URL;
if (!base) {
  console.error("openai_stream: SWARM_PROXY_URL is required");
  process.exit(2);
}
const model = process.env.SWARM_MODEL ?? "stories260K";
const maxTokens = Number(process.env.MAX_TOKENS ?? 200);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: process.env.SWARM_API_KEY ?? "none", maxRetries: 0});
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);
out.retrieved = await client.models.retrieve(model);

const comp = await client.completions.create({
  model, prompt: "", max_tokens: maxTokens, temperature: 0, stream: true, stream_options: {include_usage: true},
});
out.completion = {text: "", chunks: 0, finish_reason: null, usage: null, ids: new Set(), objects: new Set()};
for await (const chunk of comp) {
  out.completion.ids.add(chunk.id);
  out.completion.objects.add(chunk.object);
  if (chunk.usage) out.completion.usage = chunk.usage;
  for (const c of chunk.choices) {
    out.completion.text += c.text;
    out.completion.chunks++;
    if (c.finish_reason) out.completion.finish_reason = c.finish_reason;
  }
}

const chat = await client.chat.completions.create({
  model, messages: [{role: "user", content: ""}], max_tokens: maxTokens, temperature: 0, stream: true,
  stream_options: {include_usage: true},
});
out.chat = {text: "", role: null, finish_reason: null, usage: null, ids: new Set(), objects: new Set()};
for await (const chunk of chat) {
  out.chat.ids.add(chunk.id);
  out.chat.objects.add(chunk.object);
  if (chunk.usage) out.chat.usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) out.chat.role = c.delta.role;
    if (c.delta.content) out.chat.text += c.delta.content;
    if (c.finish_reason) out.chat.finish_reason = c.finish_reason;
  }
}

try {
  await client.completions.create({model: "no-such-model", prompt: "x", max_tokens: 1});
  out.error = null;
} catch (e) {
  out.error = {status: e.status, code: e.code, type: e.type, param: e.param, message: e.message};
}

// caught returns the OpenAI error fields of a rejected call.
async function caught(call) {
  try {
    await call();
    return null;
  } catch (e) {
    return {status: e.status, code: e.code, type: e.type, param: e.param, message: e.message};
  }
}
out.retrieveError = await caught(() => client.models.retrieve("no-such-model"));
out.formatError = await caught(() => client.chat.completions.create({
  model, messages: [{role: "user", content: ""}], max_tokens: 1, response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "string", format: "date"}}},
}));

for (const k of ["completion", "chat"]) {
  out[k].ids = [...out[k].ids];
  out[k].objects = [...out[k].objects];
}
console.log(JSON.stringify(out));
