// sliding_oracle.mjs: llama.cpp (node-llama-cpp, CPU, f32 KV cache, flash
// attention off, its sliding-window KV cache) as the external oracle of
// swarm's sliding-window attention. For each prefix length L it evaluates
// the first L token ids in a fresh sequence and prints the next-token
// probabilities, softmax(logits) over the whole vocabulary (temperature 1,
// no top-k/top-p/min-p), as JSON {"L": [p_0, ..., p_{V-1}], ...}.
//
// Usage: node sliding_oracle.mjs MODEL.gguf '[ids...]' '[L...]'
import {getLlama} from "node-llama-cpp";

const [,, model, idsJSON, lensJSON] = process.argv;
if (!model || !idsJSON || !lensJSON) {
  console.error("usage: node sliding_oracle.mjs MODEL.gguf '[ids...]' '[L...]'");
  process.exit(2);
}
const ids = JSON.parse(idsJSON);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const m = await llama.loadModel({modelPath: model});
const ctx = await m.createContext({
  // Room beyond the longest prefix: a full context would make node-llama-cpp shift it.
  contextSize: ids.length + 64, batchSize: ids.length + 64, threads: 1,
  flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
});
const out = {};
for (const L of JSON.parse(lensJSON)) {
  const seq = ctx.getSequence();
  // The probabilities are those before sampling; the sampled token does not
  // matter, but an end-of-generation one would end the generator without a
  // value (node-llama-cpp stops there unless yieldEogToken), so it is
  // yielded too, and the seed makes the draw the same every run.
  const gen = seq.evaluateWithMetadata(ids.slice(0, L), {probabilities: true},
    {temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1, yieldEogToken: true});
  const r = await gen.next();
  if (r.done) throw new Error(`prefix ${L}: llama.cpp yielded no token`);
  const p = new Array(m.tokens.vocabSize ?? 0).fill(0);
  for (const [tok, prob] of r.value.probabilities) p[tok] = prob;
  out[L] = p;
  await gen.return();
  seq.dispose();
}
console.log(JSON.stringify(out));
