// llama_bench.mjs: llama.cpp's speed on a GGUF file, the other side of
// `swarm bench local --vs-llama-cpp` and `swarm bench server
// --vs-llama-cpp` (through node-llama-cpp 3.22.1 and its prebuilt CPU
// binary, llama.cpp's default settings: F16 attention cache, its own
// choice of flash attention).
//
// Usage: node llama_bench.mjs --model FILE.gguf [--threads 2]
//          [--prompt-tokens 127] [--gen-tokens 64] [--sequences 1,4,16]
//          [--seq-prompt-tokens 8]
//
// Prints one JSON object on one line:
//   {"engine": "llama.cpp", "threads": T,
//    "load_s": S,               loadModel of the file, seconds
//    "prompt_tokens": P, "prefill_tok_s": X,
//                               P prompt tokens evaluated in one call (llama.cpp
//                               batches them), up to the next-token choice
//    "gen_tokens": G, "decode_tok_s": Y,
//                               G greedy single-token steps after that prompt,
//                               each step's token fed back
//    "sequences": [{"sequences": N, "aggregate_tok_s": Z}, ...]}
//                               N sequences of one context (createContext
//                               {sequences: N}) each prefill --seq-prompt-tokens
//                               tokens, then decode G tokens each, all at
//                               once: node-llama-cpp puts the N pending steps
//                               in one llama_decode batch; Z = N*G / wall time
//
// The prompt is synthetic token ids (3 + 7919*i mod (vocab-3), skipping the
// three special tokens of a Llama vocabulary), the same formula the Go side
// uses; speed does not depend on which ids they are. Generation does not
// stop at end-of-generation tokens.
import {parseArgs} from "node:util";
import {getLlama} from "node-llama-cpp";

const {values: args} = parseArgs({options: {
  model: {type: "string"}, threads: {type: "string", default: "2"},
  "prompt-tokens": {type: "string", default: "127"}, "gen-tokens": {type: "string", default: "64"},
  sequences: {type: "string", default: ""}, "seq-prompt-tokens": {type: "string", default: "8"},
}});
function fail(msg) {
  console.error(`llama_bench: ${msg}`);
  process.exit(2);
}
function positive(name) {
  const v = Number(args[name]);
  if (!Number.isInteger(v) || v < 1) fail(`--${name} ${args[name]}: want an integer >= 1`);
  return v;
}
if (!args.model) fail("--model FILE.gguf is required");
const threads = positive("threads");
const promptTokens = positive("prompt-tokens");
const genTokens = positive("gen-tokens");
const seqPrompt = positive("seq-prompt-tokens");
const sequences = args.sequences === "" ? [] : args.sequences.split(",").map((s) => {
  const n = Number(s.trim());
  if (!Number.isInteger(n) || n < 1) fail(`--sequences ${args.sequences}: want positive integers separated by commas`);
  return n;
});

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
let t0 = performance.now();
const model = await llama.loadModel({modelPath: args.model, gpuLayers: 0});
const loadS = (performance.now() - t0) / 1e3;
const vocab = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 259;
const ids = (n, seed) => Array.from({length: n}, (_, i) => 3 + ((7919 * (i + seed)) % (vocab - 3)));

// step evaluates tokens on a sequence and returns the greedy next token.
async function step(sequence, tokens) {
  const input = tokens.map((t, i) => i < tokens.length - 1 ? t
    : [t, {generateNext: {token: true, options: {temperature: 0}}}]);
  const out = await sequence.controlledEvaluate(input);
  const next = out[tokens.length - 1]?.next?.token;
  if (next == null) fail("llama.cpp returned no next token");
  return next;
}

// decode runs n greedy single-token steps after token, feeding each back.
async function decode(sequence, token, n) {
  for (let i = 0; i < n; i++) token = await step(sequence, [token]);
}

const single = await model.createContext({
  contextSize: promptTokens + genTokens + 8, batchSize: Math.max(promptTokens, 8), threads,
});
const seq = single.getSequence();
const prompt = ids(promptTokens, 0);
t0 = performance.now();
const first = await step(seq, prompt);
const prefillTokS = promptTokens / ((performance.now() - t0) / 1e3);
t0 = performance.now();
await decode(seq, first, genTokens);
const decodeTokS = genTokens / ((performance.now() - t0) / 1e3);
await single.dispose();

const multi = [];
for (const n of sequences) {
  const ctx = await model.createContext({
    contextSize: seqPrompt + genTokens + 8, sequences: n, batchSize: Math.max(n * seqPrompt, n), threads,
  });
  const seqs = Array.from({length: n}, () => ctx.getSequence());
  const firsts = await Promise.all(seqs.map((s, i) => step(s, ids(seqPrompt, 1000 * (i + 1)))));
  t0 = performance.now();
  await Promise.all(seqs.map((s, i) => decode(s, firsts[i], genTokens)));
  multi.push({sequences: n, aggregate_tok_s: n * genTokens / ((performance.now() - t0) / 1e3)});
  await ctx.dispose();
}

process.stdout.write(JSON.stringify({
  engine: "llama.cpp", threads, load_s: loadS,
  prompt_tokens: promptTokens, prefill_tok_s: prefillTokS,
  gen_tokens: genTokens, decode_tok_s: decodeTokS, sequences: multi,
}) + "\n");
await model.dispose();
await llama.dispose();
