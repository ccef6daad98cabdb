// bench/serve's client: B concurrent streams through the npm `openai` client, each a prompt of exactly
// --prompt random token ids (a fresh draw per request, so the prompt cache never helps) and greedy
// --gen tokens, each of them the token of " the": a logit_bias of +100 on it makes every step's argmax
// that token (the step's work is the same whatever it picks), so that every token is text the server
// turns into a chunk — with random weights the argmax is mostly a token without text, which the server
// never sends, and neither the overhead of a chunk per token nor TTFT would be measured. The
// end-of-sequence ids are banned as well (every answer is --gen tokens, as `hfstatic bench`'s ignore_eos). All B requests are sent at once, as `hfstatic bench --sequences B` adds its B prompts.
// One request first warms the connection and the client up; then per B in --streams: wall seconds from
// sending to the last [DONE], aggregate tok/s over it, each request's TTFT (sending to its first chunk with
// a choice). Prints one JSON object.
//   node bench/serve_client.js --url http://127.0.0.1:PORT --streams 1,4,8,16 --prompt 64 --gen 64
//        [--eos 2,151643] [--seed 1]
"use strict";
const path = require("path");
const OpenAI = require(require.resolve("openai", { paths: [path.join(__dirname, "..")] })).default;

function args() {
  const a = { url: "", streams: [1], prompt: 64, gen: 64, eos: [], seed: 1 };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    const [k, x] = [v[i], v[i + 1]];
    if (k === "--url") a.url = x;
    else if (k === "--streams") a.streams = x.split(",").map(Number);
    else if (k === "--prompt") a.prompt = Number(x);
    else if (k === "--gen") a.gen = Number(x);
    else if (k === "--eos") a.eos = x ? x.split(",").map(Number) : [];
    else if (k === "--seed") a.seed = Number(x);
    else throw new Error("unknown option " + k);
  }
  return a;
}

// xorshift32: reproducible prompts without a dependency
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
}

async function one(client, a, prompt, bias) {
  const t0 = performance.now();
  let ttft = 0, tokens = 0, cached = 0, chunks = 0;
  const s = await client.completions.create({ model: "default", prompt, max_tokens: a.gen, temperature: 0,
                                              logit_bias: bias, stream: true,
                                              stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) {
      tokens = chunk.usage.completion_tokens;
      cached = (chunk.usage.prompt_tokens_details || {}).cached_tokens || 0;
    }
    if (chunk.choices && chunk.choices.length && chunk.choices[0].text) {
      if (!ttft) ttft = performance.now() - t0;
      ++chunks;
    }
  }
  return { ttft, tokens, cached, chunks, end: performance.now() };
}

const median = (v) => { const s = [...v].sort((x, y) => x - y); const n = s.length;
                        return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

async function main() {
  const a = args();
  const client = new OpenAI({ baseURL: a.url + "/v1", apiKey: "none", maxRetries: 0, timeout: 3600000 });
  const vocab = (await client.models.list()).data[0].meta.vocab_size;
  const bias = {};
  for (const id of a.eos) bias[String(id)] = -100;
  const tok = await fetch(a.url + "/tokenize", { method: "POST", body: JSON.stringify({ content: " the", add_special: false }) });
  const ids = (await tok.json()).tokens;
  bias[String(ids[ids.length - 1])] = 100;
  const next = rng(a.seed * 7919);
  const draw = () => Array.from({ length: a.prompt }, () => next() % vocab);
  await one(client, { ...a, gen: 2 }, draw(), bias);
  const rounds = [];
  for (const streams of a.streams) {
    const prompts = Array.from({ length: streams }, draw);
    const t0 = performance.now();
    const got = await Promise.all(prompts.map((p) => one(client, a, p, bias)));
    const wall = (Math.max(...got.map((g) => g.end)) - t0) / 1000;
    const tokens = got.reduce((n, g) => n + g.tokens, 0);
    rounds.push({ streams, wall_s: wall, tokens, tok_s: tokens / wall, ttft_median_ms: median(got.map((g) => g.ttft)),
                  ttft_max_ms: Math.max(...got.map((g) => g.ttft)),
                  short_answers: got.filter((g) => g.tokens !== a.gen).length,
                  min_text_chunks: Math.min(...got.map((g) => g.chunks)),
                  cached_tokens: got.reduce((n, g) => n + g.cached, 0) });
  }
  process.stdout.write(JSON.stringify({ rounds }) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
