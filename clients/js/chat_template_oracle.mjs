// chat_template_oracle.mjs: the reference renderer of chat templates,
// @huggingface/jinja (transformers.js's Jinja), for the Go renderer of
// ingress/openai (its test chat_oracle_test.go requires byte-identical
// output).
//
// Stdin: a JSON array of cases, each {"template": SOURCE, "context":
// {...}, "now": MILLISECONDS?}. The context holds the template variables
// (messages, add_generation_prompt, bos_token, eos_token, tools, ...) as
// apply_chat_template passes them; "now", when given, is the time that
// strftime_now formats (in UTC), so that a test can pin it.
//
// Stdout: a JSON array with one {"text": RENDERED} or {"error": MESSAGE}
// per case, in order.
import { Template } from "@huggingface/jinja";

const RealDate = Date;

// withNow runs fn with `new Date()` (and Date.now) frozen at ms.
function withNow(ms, fn) {
  if (ms === undefined || ms === null) {
    return fn();
  }
  class FixedDate extends RealDate {
    constructor(...args) {
      super(...(args.length === 0 ? [ms] : args));
    }
    static now() {
      return ms;
    }
  }
  globalThis.Date = FixedDate;
  try {
    return fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

const chunks = [];
for await (const chunk of process.stdin) {
  chunks.push(chunk);
}
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = cases.map((c) => {
  try {
    const text = withNow(c.now, () => new Template(c.template).render(c.context));
    return { text };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
});
process.stdout.write(JSON.stringify(out));
