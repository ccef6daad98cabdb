#!/usr/bin/env node
// The reference for a generation's streamed text, from transformers.js: reads
//   {"tokenizer_dir": DIR, "cases": [{"prompt": TEXT, "gen": [ids...]}, ...]}
// on stdin and prints [{"prompt_ids": [...], "cont": decode(prompt + gen) minus decode(prompt)}, ...]
// (skip_special_tokens, as `hfstatic run` streams; cont is null where decode(prompt) is no prefix).
'use strict';
const path = require('path');

(async () => {
  const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  const dir = path.resolve(input.tokenizer_dir);
  env.localModelPath = path.dirname(dir) + '/';
  const tok = await AutoTokenizer.from_pretrained(path.basename(dir));
  const out = input.cases.map(({ prompt, gen }) => {
    const ids = tok.encode(prompt);
    const base = tok.decode(ids, { skip_special_tokens: true });
    const whole = tok.decode([...ids, ...gen], { skip_special_tokens: true });
    return { prompt_ids: ids, cont: whole.startsWith(base) ? whole.slice(base.length) : null };
  });
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
