// llama_logits_oracle.mjs: the external oracle for swarm's model outputs.
// llama.cpp (through node-llama-cpp 3.22.1 and its prebuilt CPU binary)
// loads a GGUF file, tokenizes a prompt with the file's own tokenizer,
// evaluates it and prints the raw logits of the next token and a greedy
// continuation. blocks/llamacpp_oracle_test.go compares swarm's engine
// with it.
//
// Usage: node llama_logits_oracle.mjs --model FILE.gguf (--prompt TEXT | --ids JSON) [--n 16]
//
// Prints one JSON object on stdout:
//   {"prompt_ids": [...],   the prompt's tokens: BOS when the file says to
//                           prepend it (llama_vocab add_bos), then the
//                           text tokenized by llama.cpp without special
//                           tokens (or --ids verbatim)
//    "vocab": N,            the model's vocabulary size
//    "logits": [...],       the N raw logits (float32 as JS numbers) of the
//                           token after the prompt, indexed by token id
//    "greedy": [...]}       n tokens chosen by argmax (temperature 0),
//                           each fed back; generation does not stop at EOS
//
// Settings chosen to make llama.cpp's arithmetic as close to exact as it
// allows: CPU only, one thread (a deterministic reduction order), flash
// attention off, and an F32 attention (KV) cache instead of the default
// F16 (node-llama-cpp's experimentalKvCache{Key,Value}Type). llama.cpp still
// rounds activations to the weight type's "vec_dot" type inside matmuls
// (F16 for f16 weights, Q8_0 for q8_0 weights); that is inherent, not a
// setting.
//
// The logits come from LlamaContextSequence.controlledEvaluate with
// generateNext.logits = true: node-llama-cpp copies llama_get_logits_ith
// for the last prompt position before sampling (no temperature, penalty or
// bias is configured, so they are the model's raw output). Its Map is
// sorted by value; it is written back in token-id order here.
import {parseArgs} from "node:util";
import {getLlama} from "node-llama-cpp";

const {values: args} = parseArgs({options: {
  model: {type: "string"}, prompt: {type: "string"}, ids: {type: "string"},
  n: {type: "string", default: "16"},
}});
function fail(msg) {
  console.error(`llama_logits_oracle: ${msg}`);
  process.exit(2);
}
if (!args.model) fail("--model FILE.gguf is required");
if ((args.prompt == null) === (args.ids == null)) fail("give exactly one of --prompt TEXT and --ids JSON");
const n = Number(args.n);
if (!Number.isInteger(n) || n < 0) fail(`--n ${args.n}: want an integer >= 0`);

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: args.model, gpuLayers: 0});
let promptIds;
if (args.ids != null) {
  promptIds = JSON.parse(args.ids);
  if (!Array.isArray(promptIds) || promptIds.length === 0 || !promptIds.every(Number.isInteger)) {
    fail(`--ids ${args.ids}: want a non-empty JSON array of token ids`);
  }
} else {
  promptIds = Array.from(model.tokenize(args.prompt, false));
  if (model.tokens.bos != null && model.tokens.shouldPrependBosToken) promptIds.unshift(model.tokens.bos);
}
const context = await model.createContext({
  contextSize: Math.max(64, promptIds.length + n + 1),
  batchSize: Math.max(64, promptIds.length + n + 1),
  threads: 1,
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();

// step evaluates tokens and returns the next-token output of the last one.
async function step(tokens, withLogits) {
  const input = tokens.map((t, i) => i < tokens.length - 1 ? t
    : [t, {generateNext: {token: true, logits: withLogits, options: {temperature: 0}}}]);
  const out = await sequence.controlledEvaluate(input);
  const next = out[tokens.length - 1]?.next;
  if (next == null || next.token == null) fail("llama.cpp returned no next token");
  return next;
}

const first = await step(promptIds, true);
const nVocab = first.logits.size; // logits: true returns every token
const logits = new Array(nVocab).fill(null);
for (const [tok, v] of first.logits) {
  if (!(tok >= 0 && tok < nVocab)) fail(`llama.cpp returned a logit for token ${tok}, outside 0..${nVocab - 1}`);
  logits[tok] = v;
}

const greedy = [];
let next = first;
for (let i = 0; i < n; i++) {
  greedy.push(next.token);
  if (i + 1 < n) next = await step([next.token], false);
}
process.stdout.write(JSON.stringify({prompt_ids: promptIds, vocab: nVocab, logits, greedy}) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
