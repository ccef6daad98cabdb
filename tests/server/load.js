// Load driver for `hfstatic serve`, through the real `openai` npm client: C concurrent clients send N
// greedy requests that mix prompt lengths, max_tokens and streaming. Every answer must equal the solo
// answer for its (prompt, max_tokens), computed first one request at a time: a lost, duplicated or crossed
// token stream shows up as a mismatch. Prints one JSON object (counts, TTFT percentiles, aggregate tok/s).
//   node tests/server/load.js --url http://127.0.0.1:PORT --clients 64 --requests 2000 [--api-key K]
//        [--checkpoint-after 100]   (prints a line "checkpoint" to stderr after that many requests finish
//                                    and waits for a line on stdin: the caller reads the server's RSS)
"use strict";
const OpenAI = require("openai").default;
const readline = require("readline");

function args() {
  const a = { url: "", clients: 8, requests: 100, apiKey: "none", checkpointAfter: 0 };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    const [k, x] = [v[i], v[i + 1]];
    if (k === "--url") a.url = x;
    else if (k === "--clients") a.clients = Number(x);
    else if (k === "--requests") a.requests = Number(x);
    else if (k === "--api-key") a.apiKey = x;
    else if (k === "--checkpoint-after") a.checkpointAfter = Number(x);
    else throw new Error("unknown option " + k);
  }
  return a;
}

// Prompts of different lengths: short ones, and longer ones that take several prefill chunks.
const WORDS = ("Once upon a time there was a little girl named Lily she loved to play outside in the park " +
               "with her friends one day she saw a big red ball").split(" ");
function prompt(i) {
  const n = [3, 8, 20, 45, 90][i % 5];
  const out = [];
  for (let k = 0; k < n; ++k) out.push(WORDS[(i * 7 + k) % WORDS.length]);
  return out.join(" ");
}
const CASES = [];
for (let i = 0; i < 10; ++i) CASES.push({ prompt: prompt(i), max_tokens: [4, 16, 48][i % 3] });

async function complete(client, c, stream) {
  const t0 = performance.now();
  if (!stream) {
    const r = await client.completions.create({ model: "default", prompt: c.prompt, max_tokens: c.max_tokens,
                                                temperature: 0 });
    return { text: r.choices[0].text, tokens: r.usage.completion_tokens, ttft: performance.now() - t0 };
  }
  const s = await client.completions.create({ model: "default", prompt: c.prompt, max_tokens: c.max_tokens,
                                              temperature: 0, stream: true,
                                              stream_options: { include_usage: true } });
  let text = "", ttft = 0, tokens = 0;
  for await (const chunk of s) {
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    const piece = chunk.choices && chunk.choices[0] ? chunk.choices[0].text : "";
    if (piece && !ttft) ttft = performance.now() - t0;
    text += piece || "";
  }
  return { text, tokens, ttft };
}

function percentile(sorted, p) {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function main() {
  const a = args();
  const client = new OpenAI({ baseURL: a.url + "/v1", apiKey: a.apiKey, maxRetries: 0, timeout: 600000 });
  const solo = [];
  for (const c of CASES) solo.push((await complete(client, c, false)).text);

  let next = 0, finished = 0, mismatches = 0, failures = 0, tokens = 0;
  const ttfts = [], errors = [];
  const seen = new Set();
  let release = null;
  const t0 = performance.now();
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= a.requests) return;
      const c = CASES[i % CASES.length];
      try {
        const r = await complete(client, c, i % 2 === 1);
        if (seen.has(i)) throw new Error("request " + i + " answered twice");
        seen.add(i);
        tokens += r.tokens;
        if (i % 2 === 1) ttfts.push(r.ttft);
        if (r.text !== solo[i % CASES.length]) {
          ++mismatches;
          if (errors.length < 5) errors.push({ request: i, got: r.text, want: solo[i % CASES.length] });
        }
      } catch (e) {
        ++failures;
        if (errors.length < 5) errors.push({ request: i, error: String(e.message || e) });
      }
      if (++finished === a.checkpointAfter) {
        process.stderr.write("checkpoint\n");
        await new Promise((resolve) => { release = resolve; });
      }
    }
  }
  if (a.checkpointAfter) {
    const rl = readline.createInterface({ input: process.stdin });
    rl.once("line", () => { if (release) release(); rl.close(); });
  }
  await Promise.all(Array.from({ length: a.clients }, worker));
  const seconds = (performance.now() - t0) / 1000;
  ttfts.sort((x, y) => x - y);
  process.stdout.write(JSON.stringify({
    requests: a.requests, answered: seen.size, mismatches, failures, errors,
    ttft_p50_ms: percentile(ttfts, 0.5), ttft_p99_ms: percentile(ttfts, 0.99),
    tokens, seconds, tok_s: tokens / seconds,
  }) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
