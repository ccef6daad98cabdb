// Sends requests to `hfstatic serve` through the real `openai` npm client, one after another, and prints
// what came back as one JSON array, for the Python tests to check: each request is {"kind": "chat" |
// "completion", "body": {...}}; each result is {"response": ...} (streams: {"chunks": [...]}) or, when the
// client threw, {"status", "error"}. Fields the client does not know (grammar, guided_json, ...) are sent
// as given, as the client sends them for any server.
//   node tests/server/openai_requests.js --url http://127.0.0.1:PORT --requests requests.json
"use strict";
const fs = require("fs");
const OpenAI = require("openai").default;

function args() {
  const a = { url: "", apiKey: "none", requests: "" };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    if (v[i] === "--url") a.url = v[i + 1];
    else if (v[i] === "--api-key") a.apiKey = v[i + 1];
    else if (v[i] === "--requests") a.requests = v[i + 1];
    else throw new Error("unknown option " + v[i]);
  }
  return a;
}

async function main() {
  const a = args();
  const client = new OpenAI({ baseURL: a.url + "/v1", apiKey: a.apiKey, maxRetries: 0 });
  const out = [];
  for (const r of JSON.parse(fs.readFileSync(a.requests, "utf8"))) {
    const api = r.kind === "chat" ? client.chat.completions : client.completions;
    try {
      const got = await api.create(r.body);
      if (r.body.stream) {
        const chunks = [];
        for await (const c of got) chunks.push(c);
        out.push({ chunks });
      } else {
        out.push({ response: got });
      }
    } catch (e) {
      out.push({ status: e.status ?? null, error: e.error ?? String(e) });
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => { console.error(e); process.exit(1); });
