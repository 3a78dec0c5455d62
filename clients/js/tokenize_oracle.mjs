// tokenize_oracle.mjs: transformers.js's tokenizers (@lenml/tokenizers, the
// tokenizer code of transformers.js) as the external oracle of swarm's
// blocks/tokenizer. It reads one JSON object on stdin,
//
//   {"models": ["llama3", "qwen3", "gemma3"], "texts": ["...", ...]}
//
// loads each model's tokenizer.json and tokenizer_config.json from the
// @lenml/tokenizer-MODEL package (the files the Go test loads too), and
// prints one JSON object:
//
//   {"llama3": {"tokenizer_json": PATH, "tokenizer_config": PATH,
//               "bos_token_id": N|null, "eos_token_id": N|null,
//               "results": [{"ids": [...], "plain": [...], "tokens": [...],
//                            "decoded": "..."}, ...]}, ...}
//
// ids is encode(text) (add_special_tokens: true, as transformers'
// encode(text)), plain the same without special tokens, tokens the token
// strings of plain, decoded decode(ids) keeping special tokens and without
// clean-up of tokenization spaces. The Go test is
// blocks/tokenizer/oracle_test.go.
//
// With "chats": [{"messages": [...], "add_generation_prompt": B}, ...] in
// the input, each model also renders every chat with its own chat_template
// (@huggingface/jinja, with bos_token and eos_token from
// tokenizer_config.json) and encodes the text without special tokens, as
// transformers' apply_chat_template(tokenize=True) does:
//
//   "chats": [{"text": "...", "ids": [...]}, ...]
//
// (ingress/openai/chat_encode_test.go).
import {readFileSync} from "node:fs";
import {createRequire} from "node:module";
import {Template} from "@huggingface/jinja";
import {TokenizerLoader} from "@lenml/tokenizers";

const require = createRequire(import.meta.url);
const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const model of input.models) {
  const jsonPath = require.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`);
  const configPath = require.resolve(`@lenml/tokenizer-${model}/models/tokenizer_config.json`);
  const tokenizerConfig = JSON.parse(readFileSync(configPath, "utf8"));
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(jsonPath, "utf8")),
    tokenizerConfig,
  });
  const tokenText = (t) => (t && typeof t === "object" ? t.content : t) ?? "";
  const chats = (input.chats ?? []).map((c) => {
    const text = new Template(tokenizerConfig.chat_template).render({
      messages: c.messages, add_generation_prompt: c.add_generation_prompt,
      bos_token: tokenText(tokenizerConfig.bos_token), eos_token: tokenText(tokenizerConfig.eos_token),
    });
    return {text, ids: tok.encode(text, {add_special_tokens: false})};
  });
  const results = input.texts.map((text) => {
    const ids = tok.encode(text);
    const plain = tok.encode(text, {add_special_tokens: false});
    const decoded = ids.length === 0 ? "" : tok.decode(ids, {skip_special_tokens: false, clean_up_tokenization_spaces: false});
    return {ids, plain, tokens: tok.model.convert_ids_to_tokens(plain), decoded};
  });
  out[model] = {
    tokenizer_json: jsonPath,
    tokenizer_config: configPath,
    bos_token_id: tok.bos_token_id ?? null,
    eos_token_id: tok.eos_token_id ?? null,
    results,
    chats,
  };
}
process.stdout.write(JSON.stringify(out));
