// transformers.js side of the tokenizer benchmark: load time and encode throughput on the same corpus.
// Usage: node bench/tokenizer_bench/bench_js.mjs CORPUS_JSONL DIR [DIR...]
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

env.allowRemoteModels = false;
const [corpusPath, ...dirs] = process.argv.slice(2);
const corpus = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const bytes = corpus.reduce((n, s) => n + Buffer.byteLength(s), 0);
for (const dir of dirs) {
  env.localModelPath = path.dirname(path.resolve(dir)) + '/';
  const t0 = performance.now();
  const tok = await AutoTokenizer.from_pretrained(path.basename(path.resolve(dir)));
  const load_s = (performance.now() - t0) / 1000;
  let tokens = 0;
  for (const s of corpus) tokens += tok.encode(s).length;  // warm-up (JIT, BPE cache)
  let passes = 0;
  const t1 = performance.now();
  let el = 0;
  while (el < 1.0 || passes < 3) {
    for (const s of corpus) tok.encode(s);
    ++passes;
    el = (performance.now() - t1) / 1000;
  }
  console.log(JSON.stringify({ dir, load_s: +load_s.toFixed(4), encode_mb_s: +((bytes * passes) / el / 1e6).toFixed(2),
                               strings_s: Math.round((corpus.length * passes) / el), tokens }));
}
