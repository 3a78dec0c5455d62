// eog_oracle.mjs: llama.cpp's special tokens (through node-llama-cpp and its
// prebuilt llama.cpp, loading only the vocabulary) as the external oracle
// of swarm's end-of-generation ids (blocks/tokenizer/special_test.go).
//
// Stdin: a JSON array of {"path": FILE.gguf, "n_vocab": N}. Stdout: a JSON
// array with one {"eog": [ids for which llama_vocab_is_eog is true, of
// 0..N-1], "bos": ID|null, "eos": ID|null, "eot": ID|null} per file.
import {getLlama} from "node-llama-cpp";

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const files = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const out = [];
for (const f of files) {
  const model = await llama.loadModel({modelPath: f.path, vocabOnly: true});
  const eog = [];
  for (let id = 0; id < f.n_vocab; id++) {
    if (model.isEogToken(id)) {
      eog.push(id);
    }
  }
  out.push({eog, bos: model.tokens.bos ?? null, eos: model.tokens.eos ?? null, eot: model.tokens.eot ?? null});
  await model.dispose();
}
process.stdout.write(JSON.stringify(out));
