// Load through a balancer while a replica is killed: C clients send N greedy requests (half streamed,
// prompts and max_tokens as in load.js) to --url; the solo answers come first, one at a time, from --solo-url
// (a replica directly, not through the balancer). After --kill-after requests have finished it prints "kill"
// to stderr and keeps going; the caller kills a replica and writes a line to stdin, which marks the moment.
// Prints one JSON object: per request its start and end (ms since the load began), whether it failed,
// whether its text equalled the solo answer and for a stream when its first text came; and the moment the
// kill was acknowledged.
//   node tests/server/failover.js --url http://127.0.0.1:NGINX --solo-url http://127.0.0.1:REPLICA
//        --clients 8 --requests 120 --kill-after 30
"use strict";
const OpenAI = require("openai").default;
const readline = require("readline");

function args() {
  const a = { url: "", soloUrl: "", clients: 8, requests: 100, killAfter: 30 };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    const [k, x] = [v[i], v[i + 1]];
    if (k === "--url") a.url = x;
    else if (k === "--solo-url") a.soloUrl = x;
    else if (k === "--clients") a.clients = Number(x);
    else if (k === "--requests") a.requests = Number(x);
    else if (k === "--kill-after") a.killAfter = Number(x);
    else throw new Error("unknown option " + k);
  }
  return a;
}

const WORDS = ("Once upon a time there was a little girl named Lily she loved to play outside in the park " +
               "with her friends one day she saw a big red ball").split(" ");
function prompt(i) {
  const n = [3, 8, 20, 45][i % 4];
  const out = [];
  for (let k = 0; k < n; ++k) out.push(WORDS[(i * 7 + k) % WORDS.length]);
  return out.join(" ");
}
const CASES = [];
for (let i = 0; i < 8; ++i) CASES.push({ prompt: prompt(i), max_tokens: [16, 48][i % 2] });

async function complete(client, c, stream, r) {
  const body = { model: "default", prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0,
                 logit_bias: { "2": -100 } };  // no end-of-sequence: every answer takes max_tokens steps
  if (!stream) return (await client.completions.create(body)).choices[0].text;
  let text = "";
  for await (const chunk of await client.completions.create({ ...body, stream: true })) {
    const piece = (chunk.choices && chunk.choices[0] && chunk.choices[0].text) || "";
    if (piece && r && r.first === undefined) r.first = performance.now() - r.t0;
    text += piece;
  }
  return text;
}

async function main() {
  const a = args();
  const options = { apiKey: "none", maxRetries: 0, timeout: 120000 };
  const solo = [];
  const soloClient = new OpenAI({ ...options, baseURL: a.soloUrl + "/v1" });
  for (const c of CASES) solo.push(await complete(soloClient, c, false, null));
  const client = new OpenAI({ ...options, baseURL: a.url + "/v1" });

  const t0 = performance.now();
  let next = 0, finished = 0, killedAt = null;
  const results = [];
  const rl = readline.createInterface({ input: process.stdin });
  rl.once("line", () => { killedAt = performance.now() - t0; rl.close(); });
  async function worker() {
    for (;;) {
      const i = next++;
      if (i >= a.requests) return;
      const c = CASES[i % CASES.length];
      const r = { request: i, stream: i % 2 === 1, start: performance.now() - t0, t0 };
      try {
        const text = await complete(client, c, r.stream, r);
        r.equal = text === solo[i % CASES.length];
        if (!r.equal) r.got = text;
      } catch (e) {
        r.error = String(e.message || e);
      }
      r.end = performance.now() - t0;
      delete r.t0;
      results.push(r);
      if (++finished === a.killAfter) process.stderr.write("kill\n");
    }
  }
  await Promise.all(Array.from({ length: a.clients }, worker));
  process.stdout.write(JSON.stringify({ killed_at: killedAt, solo, results }) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
