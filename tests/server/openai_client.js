// Talks to `hfstatic serve` through the real `openai` npm client and prints one JSON object of what it got,
// for tests/tools/test_serve.py to check: chat and completions, streaming and not, stop strings,
// max_tokens, seeded sampling, and the prompt cache on a chat's second turn.
//   node tests/server/openai_client.js --url http://127.0.0.1:PORT --api-key KEY --prompt "Once upon a time"
"use strict";
const OpenAI = require("openai").default;

function args() {
  const a = { url: "", apiKey: "none", prompt: "Once upon a time" };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    if (v[i] === "--url") a.url = v[i + 1];
    else if (v[i] === "--api-key") a.apiKey = v[i + 1];
    else if (v[i] === "--prompt") a.prompt = v[i + 1];
    else throw new Error("unknown option " + v[i]);
  }
  return a;
}

async function collectChat(stream) {
  let text = "", chunks = 0, finish = null, usage = null, role = null;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    const ch = c.choices[0];
    if (!ch) continue;
    if (ch.delta.role) role = ch.delta.role;
    if (ch.delta.content) { text += ch.delta.content; ++chunks; }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { text, chunks, finish, usage, role };
}

async function collectText(stream) {
  let text = "", chunks = 0, finish = null, usage = null;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    const ch = c.choices[0];
    if (!ch) continue;
    if (ch.text) { text += ch.text; ++chunks; }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { text, chunks, finish, usage };
}

async function main() {
  const a = args();
  const client = new OpenAI({ baseURL: a.url + "/v1", apiKey: a.apiKey, maxRetries: 0 });
  const out = {};
  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);
  const model = out.models[0];

  // Chat, greedy: whole and streamed must agree.
  const messages = [{ role: "user", content: a.prompt }];
  const chat = await client.chat.completions.create({ model, messages, temperature: 0, max_tokens: 24 });
  out.chat = { text: chat.choices[0].message.content, role: chat.choices[0].message.role,
               finish: chat.choices[0].finish_reason, usage: chat.usage, object: chat.object };
  out.chat_stream = await collectChat(await client.chat.completions.create(
      { model, messages, temperature: 0, max_tokens: 24, stream: true, stream_options: { include_usage: true } }));

  // Completions, greedy (compared with `hfstatic run` by the test).
  const c = await client.completions.create({ model, prompt: a.prompt, temperature: 0, max_tokens: 30 });
  out.completion = { text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage };
  out.completion_stream = await collectText(await client.completions.create(
      { model, prompt: a.prompt, temperature: 0, max_tokens: 30, stream: true }));

  // A stop string cut from the middle of the greedy text (it spans several tokens).
  const full = out.completion.text;
  out.stop_string = full.slice(12, 19);
  const s = await client.completions.create({ model, prompt: a.prompt, temperature: 0, max_tokens: 30, stop: [out.stop_string, "zzzz"] });
  out.stopped = { text: s.choices[0].text, finish: s.choices[0].finish_reason, usage: s.usage };
  out.stopped_stream = await collectText(await client.completions.create(
      { model, prompt: a.prompt, temperature: 0, max_tokens: 30, stop: out.stop_string, stream: true }));

  // max_tokens.
  const m = await client.completions.create({ model, prompt: a.prompt, temperature: 0, max_tokens: 7 });
  out.max_tokens = { finish: m.choices[0].finish_reason, usage: m.usage };

  // Seeded sampling: the same seed gives the same text, concurrently or not.
  const seeded = (seed) => client.completions.create({ model, prompt: a.prompt, temperature: 1, max_tokens: 40, seed })
                                 .then((r) => r.choices[0].text);
  out.seed_a = await seeded(42);
  const [b, c2] = await Promise.all([seeded(42), seeded(7)]);
  out.seed_b = b;
  out.seed_other = c2;

  // A chat's second turn: the history is in the prompt cache.
  const turn1 = [{ role: "system", content: "You tell stories about a cat named Tom." },
                 { role: "user", content: "Tell me about Tom and the garden." }];
  const r1 = await client.chat.completions.create({ model, messages: turn1, temperature: 0, max_tokens: 20 });
  const turn2 = turn1.concat([{ role: "assistant", content: r1.choices[0].message.content },
                              { role: "user", content: "What happened next?" }]);
  const r2 = await client.chat.completions.create({ model, messages: turn2, temperature: 0, max_tokens: 20,
                                                    user: "u1", metadata: { k: "v" }, store: false });
  out.turn1_usage = r1.usage;
  out.turn2_usage = r2.usage;
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
