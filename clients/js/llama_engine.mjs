// llama_engine.mjs: a REAL inference engine, llama.cpp (through the
// node-llama-cpp npm package and its prebuilt linux-x64 binary), behind a
// minimal OpenAI-compatible HTTP wrapper that is OURS (this file). swarm's
// full-range replica tests register it with `swarm serve --full-range`
// exactly as they would register vLLM, SGLang or llama.cpp's own server.
//
// Usage: node llama_engine.mjs --model FILE.gguf [--port N] [--name ID]
// Prints "llama_engine: listening on http://127.0.0.1:PORT" once the model
// is loaded. Serves:
//   GET  /health          200 {"status":"ok"}
//   GET  /v1/models       {"object":"list","data":[{"id":ID,...}]}
//   POST /v1/completions  prompt (string), max_tokens, temperature, top_p,
//                         top_k, seed, stream, stream_options.include_usage
// Requests run one at a time on one context sequence (history cleared per
// request), CPU only, one thread.
import http from "node:http";
import {parseArgs} from "node:util";
import path from "node:path";
import {getLlama, LlamaCompletion} from "node-llama-cpp";

const {values: args} = parseArgs({options: {
  model: {type: "string"}, port: {type: "string", default: "0"},
  name: {type: "string"}, threads: {type: "string", default: "1"},
}});
if (!args.model) {
  console.error("llama_engine: --model FILE.gguf is required");
  process.exit(2);
}
const name = args.name ?? path.basename(args.model).replace(/\.gguf$/, "");
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: args.model});
const context = await model.createContext({contextSize: model.trainContextSize ?? 512, threads: Number(args.threads)});
const sequence = context.getSequence();
const completion = new LlamaCompletion({contextSequence: sequence});
const created = Math.floor(Date.now() / 1000);

let queue = Promise.resolve();
function serialized(fn) {
  const run = queue.then(fn, fn);
  queue = run.catch(() => {});
  return run;
}

function sendJSON(res, status, obj) {
  res.writeHead(status, {"Content-Type": "application/json"});
  res.end(JSON.stringify(obj));
}

function badRequest(res, message, param = null) {
  sendJSON(res, 400, {error: {message, type: "invalid_request_error", param, code: null}});
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
}

async function completions(req, res) {
  let body;
  try {
    body = await readBody(req);
  } catch (e) {
    return badRequest(res, `body is not JSON: ${e.message}`);
  }
  if (typeof body.prompt !== "string") return badRequest(res, "prompt must be a string", "prompt");
  const maxTokens = body.max_tokens ?? 16;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) return badRequest(res, "max_tokens must be >= 1", "max_tokens");
  const id = `cmpl-${Math.random().toString(16).slice(2)}`;
  const base = {id, object: "text_completion", created: Math.floor(Date.now() / 1000), model: name};
  const stream = body.stream === true;
  const includeUsage = stream && body.stream_options?.include_usage === true;
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  await serialized(async () => {
    if (abort.signal.aborted) return;
    await sequence.clearHistory();
    if (stream) res.writeHead(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"});
    let text = "";
    let count = 0;
    const opts = {
      maxTokens, temperature: body.temperature ?? 1, topP: body.top_p, topK: body.top_k,
      seed: body.seed, signal: abort.signal, stopOnAbortSignal: true,
      onTextChunk: (chunk) => {
        text += chunk;
        if (stream && chunk !== "") {
          res.write(`data: ${JSON.stringify({...base, choices: [{text: chunk, index: 0, logprobs: null, finish_reason: null}], ...(includeUsage ? {usage: null} : {})})}\n\n`);
        }
      },
      onToken: (tokens) => { count += tokens.length; },
    };
    let meta;
    try {
      meta = (await completion.generateCompletionWithMeta(body.prompt, opts)).metadata;
    } catch (e) {
      if (!stream) return sendJSON(res, 500, {error: {message: String(e), type: "server_error", param: null, code: null}});
      res.end(`data: ${JSON.stringify({error: {message: String(e), type: "server_error"}})}\n\n`);
      return;
    }
    const finish = meta.stopReason === "maxTokens" ? "length" : "stop";
    const usage = {prompt_tokens: model.tokenize(body.prompt).length + 1, completion_tokens: count, total_tokens: 0};
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    if (!stream) {
      return sendJSON(res, 200, {...base, choices: [{text, index: 0, logprobs: null, finish_reason: finish}], usage});
    }
    res.write(`data: ${JSON.stringify({...base, choices: [{text: "", index: 0, logprobs: null, finish_reason: finish}], ...(includeUsage ? {usage: null} : {})})}\n\n`);
    if (includeUsage) res.write(`data: ${JSON.stringify({...base, choices: [], usage})}\n\n`);
    res.end("data: [DONE]\n\n");
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (req.method === "GET" && url.pathname === "/health") return sendJSON(res, 200, {status: "ok"});
  if (req.method === "GET" && url.pathname === "/v1/models") {
    return sendJSON(res, 200, {object: "list", data: [{id: name, object: "model", created, owned_by: "llama.cpp via node-llama-cpp"}]});
  }
  if (req.method === "POST" && url.pathname === "/v1/completions") {
    completions(req, res).catch((e) => { if (!res.headersSent) sendJSON(res, 500, {error: {message: String(e), type: "server_error"}}); else res.end(); });
    return;
  }
  sendJSON(res, 404, {error: {message: `${req.method} ${url.pathname} not found`, type: "invalid_request_error", param: null, code: null}});
});
server.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`llama_engine: listening on http://127.0.0.1:${server.address().port}`);
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { server.close(); process.exit(0); });
