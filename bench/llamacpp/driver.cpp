// Minimal llama.cpp driver for bench/compare, written against llama.cpp's public C API only (include/llama.h,
// ggml/include/ggml-backend.h from the same release as the prebuilt libraries it links). It exists so the
// llama.cpp numbers carry no wrapper overhead (no Node, no sampling chain, no tokenizer).
//
//   driver bench    MODEL.gguf --prompt 512 --gen 128 --threads 2 [--reps N] [--gpu-layers 99]
//                                                                   -> one JSON line: prefill_tok_s, decode_tok_s, ...
//                                                                      (medians of N runs, each from an empty cache)
//   driver batched  MODEL.gguf --sequences 1,2,4,8 --prompt 512 --gen 128 --threads 2 [--reps N]
//                                                                   -> one JSON line: per B, B sequences (seq_id
//                                                                      0..B-1) prefilled one after the other, then
//                                                                      gen - 1 llama_decode calls of one batch with
//                                                                      one token per sequence; aggregate decode tok/s
//   driver logits   MODEL.gguf --tokens 1,2,3 --out FILE.f32        -> logits [T, vocab] float32, row-major
//                                                                      (f32 K/V cache, flash attention off unless
//                                                                      HFS_LLAMA_FLASH is set; bench keeps defaults)
//   driver quantize IN.gguf OUT.gguf q8_0|q4_0|f16 [--threads N]    -> llama_model_quantize, pure (every matrix)
//   driver grammar  MODEL.gguf --tokens 1,2,3 --grammar FILE.gbnf --gen N [--reps R]
//                                                                   -> greedy generation under the GBNF grammar
//                                                                      (llama_sampler_init_grammar, then greedy;
//                                                                      ends at an end-of-generation token or N):
//                                                                      {"tokens": [...], "sample_us": median µs
//                                                                      per token of the grammar chain,
//                                                                      "greedy_us": of greedy alone, same logits}
//   driver eog      MODEL.gguf                                     -> {"eog": [...]}: the ids llama.cpp ends
//                                                                      generation at (its EOS and the end
//                                                                      tokens it recognises by their text)
//
// --gpu-layers N (bench, batched): layers offloaded to the GPU backend the loaded libraries bring (llama.cpp's
// -ngl; 99 = all, with the output layer): needs the Vulkan or CUDA build of the libraries (compare --backend
// vulkan links a driver per build). Default 0, the CPU. The JSON then names the GPU devices ggml found.
//
// Environment: HFS_GGML_BACKEND_DIR = folder holding libggml-cpu-*.so (the CPU variants are dlopen'ed; the best
// one for this CPU wins, as in any llama.cpp build with GGML_BACKEND_DL).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

namespace {

bool g_verbose = false;

void quiet_log(ggml_log_level level, const char* text, void*) {
  if (g_verbose || level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int die(const std::string& msg) {
  std::fprintf(stderr, "llamacpp-driver: %s\n", msg.c_str());
  return 1;
}

struct Args {
  std::string cmd, model, out, qtype, grammar;
  int prompt = 512, gen = 128, threads = 2, reps = 1, gpu_layers = 0;
  std::vector<llama_token> tokens;
  std::vector<int> sequences;
};

std::vector<int> int_list(const std::string& v) {
  std::vector<int> out;
  size_t p = 0;
  while (p < v.size()) {
    size_t q = v.find(',', p);
    if (q == std::string::npos) q = v.size();
    out.push_back(std::atoi(v.substr(p, q - p).c_str()));
    p = q + 1;
  }
  return out;
}

bool parse(int argc, char** argv, Args& a, std::string& err) {
  if (argc < 3) {
    err = "usage: driver bench|batched|logits|quantize|grammar|eog MODEL.gguf [options] (see driver.cpp)";
    return false;
  }
  a.cmd = argv[1];
  a.model = argv[2];
  int i = 3;
  if (a.cmd == "quantize") {
    if (argc < 5) {
      err = "usage: driver quantize IN.gguf OUT.gguf q8_0|q4_0|f16";
      return false;
    }
    a.out = argv[3];
    a.qtype = argv[4];
    i = 5;
  }
  for (; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) {
      if (k == "-v") { g_verbose = true; continue; }
      err = "option " + k + " needs a value";
      return false;
    }
    std::string v = argv[++i];
    if (k == "--prompt") a.prompt = std::atoi(v.c_str());
    else if (k == "--gen") a.gen = std::atoi(v.c_str());
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--reps") a.reps = std::atoi(v.c_str());
    else if (k == "--gpu-layers") a.gpu_layers = std::atoi(v.c_str());
    else if (k == "--out") a.out = v;
    else if (k == "--grammar") a.grammar = v;
    else if (k == "--tokens") {
      for (int t : int_list(v)) a.tokens.push_back(static_cast<llama_token>(t));
    } else if (k == "--sequences") {
      a.sequences = int_list(v);
    } else {
      err = "unknown option " + k;
      return false;
    }
  }
  return true;
}

int quantize(const Args& a) {
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  if (a.qtype == "q8_0") qp.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
  else if (a.qtype == "q4_0") qp.ftype = LLAMA_FTYPE_MOSTLY_Q4_0;
  else if (a.qtype == "f16") qp.ftype = LLAMA_FTYPE_MOSTLY_F16;
  else return die("quantize: type " + a.qtype + " not supported (expected q8_0, q4_0 or f16)");
  // pure: every layer matrix gets the requested type (not llama.cpp's default per-tensor mix), and the
  // token embedding / output tensor get Q8_0, the storage hfstatic's int8 and int4 exports give them
  // (int8 per row), so each row compares the same precision per tensor.
  qp.pure = true;
  if (a.qtype != "f16") {
    qp.token_embedding_type = GGML_TYPE_Q8_0;
    qp.output_tensor_type = GGML_TYPE_Q8_0;
  }
  qp.nthread = a.threads;
  if (llama_model_quantize(a.model.c_str(), a.out.c_str(), &qp) != 0)
    return die("llama_model_quantize " + a.model + " -> " + a.out + " (" + a.qtype + ") failed");
  return 0;
}

struct Loaded {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  ~Loaded() {
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
  }
};

// The GPU devices ggml's loaded backends offer, as a JSON array of "name: description" strings.
std::string gpu_devices() {
  std::string out = "[";
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t d = ggml_backend_dev_get(i);
    if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_GPU) continue;
    std::string s = std::string(ggml_backend_dev_name(d)) + ": " + ggml_backend_dev_description(d);
    for (char& c : s)
      if (c == '"' || c == '\\') c = '\'';
    out += (out.size() > 1 ? ", \"" : "\"") + s + "\"";
  }
  return out + "]";
}

bool load_model(const Args& a, Loaded& L, std::string& err) {
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = a.gpu_layers;
  if (a.gpu_layers > 0 && gpu_devices() == "[]") {
    err = "--gpu-layers " + std::to_string(a.gpu_layers) + ": ggml found no GPU device (a CPU-only build, or no driver)";
    return false;
  }
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // read weights up front: no page faults inside the timed region
  L.model = llama_model_load_from_file(a.model.c_str(), mp);
  if (!L.model) {
    err = "llama_model_load_from_file " + a.model + " failed (run with -v for llama.cpp's log)";
    return false;
  }
  return true;
}

// A context on L.model (replacing L.ctx): n_seq_max sequences, n_ctx cells in all; otherwise llama.cpp's
// defaults (f16 K/V cache, flash attention auto, kv_unified off: one cache stream of n_ctx / n_seq_max cells
// per sequence).
bool make_context(const Args& a, uint32_t n_ctx, uint32_t n_batch, uint32_t n_seq_max, bool f32_cache, Loaded& L,
                  std::string& err) {
  if (L.ctx) llama_free(L.ctx);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_ubatch = n_batch;  // the whole prompt in one physical batch: one graph, like hfstatic's prefill
  cp.n_seq_max = n_seq_max;
  cp.n_threads = a.threads;
  cp.n_threads_batch = a.threads;
  cp.no_perf = true;
  if (f32_cache) {  // the correctness check isolates the weights: f32 cache, plain (non-flash) attention
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    if (std::getenv("HFS_LLAMA_FLASH") == nullptr) cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  }
  L.ctx = llama_init_from_model(L.model, cp);
  if (!L.ctx) {
    err = "llama_init_from_model failed for " + a.model + " (n_ctx " + std::to_string(n_ctx) + ", n_seq_max " +
          std::to_string(n_seq_max) + ")";
    return false;
  }
  return true;
}

bool load(const Args& a, uint32_t n_ctx, uint32_t n_batch, bool f32_cache, Loaded& L, std::string& err) {
  return load_model(a, L, err) && make_context(a, n_ctx, n_batch, 1, f32_cache, L, err);
}

// Untimed runs before the timed ones: on a GPU the first graph of each shape compiles its pipelines (and
// uploads), which hfstatic does at load; on the CPU nothing is cached, so none.
int warmup_runs(const Args& a) { return a.gpu_layers > 0 ? 1 : 0; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

llama_token argmax(const float* logits, int n) {
  return static_cast<llama_token>(std::max_element(logits, logits + n) - logits);
}

int bench(const Args& a) {
  if (a.prompt < 1 || a.gen < 1 || a.reps < 1) return die("bench: --prompt, --gen and --reps must be >= 1");
  Loaded L;
  std::string err;
  if (!load(a, static_cast<uint32_t>(a.prompt + a.gen), static_cast<uint32_t>(a.prompt), false, L, err)) return die(err);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(L.model));
  // Random prompt ids, same generator and seed as `hfstatic bench` (std::mt19937(1) % vocab).
  std::mt19937 rng(1);
  std::vector<llama_token> prompt(static_cast<size_t>(a.prompt));
  for (llama_token& t : prompt) t = static_cast<llama_token>(rng() % static_cast<uint32_t>(n_vocab));

  // Runs as `hfstatic bench --reps` does them: each from an empty cache, prefill and decode times medians.
  std::vector<double> prefill_s, decode_s;
  int steps = 0;
  for (int rep = -warmup_runs(a); rep < a.reps; ++rep) {
    llama_memory_clear(llama_get_memory(L.ctx), true);
    double t0 = now_s();
    if (llama_decode(L.ctx, llama_batch_get_one(prompt.data(), a.prompt)) != 0) return die("llama_decode(prompt) failed");
    llama_token next = argmax(llama_get_logits_ith(L.ctx, -1), n_vocab);
    double t1 = now_s();
    // Greedy decode of `gen` tokens: gen - 1 single-token decodes after the token the prefill produced, the
    // same count `hfstatic bench` times (its generate() emits the first token from the prefill logits).
    steps = 0;
    for (int i = 1; i < a.gen; ++i) {
      if (llama_decode(L.ctx, llama_batch_get_one(&next, 1)) != 0) return die("llama_decode(token) failed");
      next = argmax(llama_get_logits_ith(L.ctx, -1), n_vocab);
      ++steps;
    }
    double t2 = now_s();
    if (rep < 0) continue;
    prefill_s.push_back(t1 - t0);
    decode_s.push_back(t2 - t1);
  }
  const double pre = median(prefill_s), dec = median(decode_s);
  std::printf(
      "{\"prefill_tok_s\": %.4f, \"decode_tok_s\": %.4f, \"ttft_ms\": %.3f, \"prompt_tokens\": %d, "
      "\"decode_steps\": %d, \"threads\": %d, \"reps\": %d, \"n_params\": %llu, \"model_size_bytes\": %llu, "
      "\"gpu_layers\": %d, \"gpu_devices\": %s}\n",
      a.prompt / pre, steps > 0 ? steps / dec : 0.0, pre * 1e3, a.prompt, steps, a.threads, a.reps,
      static_cast<unsigned long long>(llama_model_n_params(L.model)),
      static_cast<unsigned long long>(llama_model_size(L.model)), a.gpu_layers, gpu_devices().c_str());
  return 0;
}

// One token of sequence `seq` at position `pos` into b (logits requested or not).
void batch_add(llama_batch& b, llama_token t, llama_pos pos, llama_seq_id seq, bool logits) {
  const int i = b.n_tokens++;
  b.token[i] = t;
  b.pos[i] = pos;
  b.n_seq_id[i] = 1;
  b.seq_id[i][0] = seq;
  b.logits[i] = logits ? 1 : 0;
}

// B sequences at once, measured as `hfstatic bench --sequences` does: B random prompts of --prompt tokens, then
// every sequence generates --gen tokens greedily; the prefill phase lasts until every sequence has its first
// token (from its prompt's logits), the decode phase is the gen - 1 steps after it, each one llama_decode of a
// batch holding the next token of every sequence (its own seq_id and position). Aggregate decode tok/s =
// B × (gen - 1) / decode time. Per B a fresh context: n_seq_max = B, n_ctx = B × (prompt + gen).
int batched(const Args& a) {
  if (a.prompt < 1 || a.gen < 1 || a.reps < 1) return die("batched: --prompt, --gen and --reps must be >= 1");
  if (a.sequences.empty()) return die("batched: needs --sequences B1,B2,... (e.g. 1,2,4,8)");
  for (int b : a.sequences)
    if (b < 1 || b > 256) return die("batched: --sequences: each count must be in [1, 256], got " + std::to_string(b));
  Loaded L;
  std::string err;
  if (!load_model(a, L, err)) return die(err);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(L.model));
  std::mt19937 rng(1);
  std::string rows;
  double base = 0;
  for (int B : a.sequences) {
    const int n_batch = std::max(a.prompt, B);
    if (!make_context(a, static_cast<uint32_t>(B * (a.prompt + a.gen)), static_cast<uint32_t>(n_batch),
                      static_cast<uint32_t>(B), false, L, err))
      return die(err);
    llama_batch batch = llama_batch_init(n_batch, 0, 1);
    std::vector<double> prefill_s, decode_s;
    int steps = 0;
    for (int rep = -warmup_runs(a); rep < a.reps; ++rep) {
      llama_memory_clear(llama_get_memory(L.ctx), true);
      std::vector<llama_token> next(static_cast<size_t>(B)), prompts(static_cast<size_t>(B) * a.prompt);
      for (llama_token& t : prompts) t = static_cast<llama_token>(rng() % static_cast<uint32_t>(n_vocab));
      double t0 = now_s();
      for (int s = 0; s < B; ++s) {  // each prompt one llama_decode, as a single-sequence prefill
        batch.n_tokens = 0;
        for (int p = 0; p < a.prompt; ++p)
          batch_add(batch, prompts[static_cast<size_t>(s) * a.prompt + p], p, s, p == a.prompt - 1);
        if (llama_decode(L.ctx, batch) != 0) {
          llama_batch_free(batch);
          return die("llama_decode(prompt of sequence " + std::to_string(s) + ", B=" + std::to_string(B) + ") failed");
        }
        next[static_cast<size_t>(s)] = argmax(llama_get_logits_ith(L.ctx, -1), n_vocab);
      }
      double t1 = now_s();
      steps = 0;
      for (int i = 1; i < a.gen; ++i) {
        batch.n_tokens = 0;
        for (int s = 0; s < B; ++s) batch_add(batch, next[static_cast<size_t>(s)], a.prompt + i - 1, s, true);
        if (llama_decode(L.ctx, batch) != 0) {
          llama_batch_free(batch);
          return die("llama_decode(" + std::to_string(B) + " tokens, step " + std::to_string(i) + ") failed");
        }
        for (int s = 0; s < B; ++s) next[static_cast<size_t>(s)] = argmax(llama_get_logits_ith(L.ctx, s), n_vocab);
        ++steps;
      }
      double t2 = now_s();
      if (rep < 0) continue;
      prefill_s.push_back(t1 - t0);
      decode_s.push_back(t2 - t1);
    }
    llama_batch_free(batch);
    const double pre = median(prefill_s), dec = median(decode_s);
    const double agg = steps > 0 ? static_cast<double>(B) * steps / dec : 0.0;
    if (base == 0) base = agg;
    char row[512];
    std::snprintf(row, sizeof row,
                  "%s{\"sequences\": %d, \"prefill_tok_s\": %.4f, \"decode_tok_s\": %.4f, "
                  "\"decode_tok_s_per_sequence\": %.4f, \"decode_vs_first\": %.4f, \"decode_steps\": %d, "
                  "\"n_ctx\": %u}",
                  rows.empty() ? "" : ", ", B, static_cast<double>(B) * a.prompt / pre, agg, agg / B,
                  base > 0 ? agg / base : 0.0, steps, llama_n_ctx(L.ctx));
    rows += row;
  }
  std::printf("{\"prompt_tokens\": %d, \"gen_tokens\": %d, \"threads\": %d, \"reps\": %d, \"kv_unified\": false, "
              "\"gpu_layers\": %d, \"gpu_devices\": %s, \"sequences\": [%s]}\n",
              a.prompt, a.gen, a.threads, a.reps, a.gpu_layers, gpu_devices().c_str(), rows.c_str());
  return 0;
}

int logits(const Args& a) {
  if (a.tokens.empty() || a.out.empty()) return die("logits: needs --tokens a,b,c and --out FILE");
  const int T = static_cast<int>(a.tokens.size());
  Loaded L;
  std::string err;
  if (!load(a, static_cast<uint32_t>(std::max(T, 8)), static_cast<uint32_t>(std::max(T, 8)), true, L, err)) return die(err);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(L.model));
  llama_batch b = llama_batch_init(T, 0, 1);
  for (int i = 0; i < T; ++i) {
    b.token[i] = a.tokens[static_cast<size_t>(i)];
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;  // every position, to compare with the reference's full [T, vocab]
  }
  b.n_tokens = T;
  int rc = llama_decode(L.ctx, b);
  if (rc != 0) {
    llama_batch_free(b);
    return die("llama_decode failed: " + std::to_string(rc));
  }
  FILE* f = std::fopen(a.out.c_str(), "wb");
  if (!f) {
    llama_batch_free(b);
    return die("cannot write " + a.out);
  }
  for (int i = 0; i < T; ++i) std::fwrite(llama_get_logits_ith(L.ctx, i), sizeof(float), static_cast<size_t>(n_vocab), f);
  std::fclose(f);
  llama_batch_free(b);
  std::printf("{\"tokens\": %d, \"vocab\": %d}\n", T, n_vocab);
  return 0;
}

std::string read_file(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return text;
}

// Greedy decoding with llama.cpp's grammar sampler: the same tokens hfstatic's constrained greedy decoding
// must produce on the same weights. Each token is also drawn by a greedy-only chain on the same logits (not
// kept) so that the grammar's cost per token is the difference of the two timings.
int grammar(const Args& a) {
  if (a.tokens.empty() || a.grammar.empty()) return die("grammar: needs --tokens a,b,c and --grammar FILE");
  const std::string text = read_file(a.grammar);
  if (text.empty()) return die("grammar: cannot read " + a.grammar);
  const int T = static_cast<int>(a.tokens.size());
  Loaded L;
  std::string err;
  const uint32_t n_ctx = static_cast<uint32_t>(T + a.gen + 8);
  if (!load(a, n_ctx, n_ctx, true, L, err)) return die(err);
  const llama_vocab* vocab = llama_model_get_vocab(L.model);
  std::vector<llama_token> out;
  std::vector<double> sample_us, greedy_us;
  for (int rep = 0; rep < std::max(1, a.reps); ++rep) {
    llama_memory_clear(llama_get_memory(L.ctx), true);
    llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler* g = llama_sampler_init_grammar(vocab, text.c_str(), "root");
    if (g == nullptr) {
      llama_sampler_free(chain);
      return die("grammar: llama.cpp cannot parse " + a.grammar);
    }
    llama_sampler_chain_add(chain, g);
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    llama_sampler* plain = llama_sampler_init_greedy();
    std::vector<llama_token> toks(a.tokens.begin(), a.tokens.end());
    out.clear();
    llama_batch b = llama_batch_get_one(toks.data(), T);
    for (int i = 0; i < a.gen; ++i) {
      if (llama_decode(L.ctx, b) != 0) {
        llama_sampler_free(chain);
        llama_sampler_free(plain);
        return die("llama_decode failed");
      }
      const double t0 = now_s();
      (void)llama_sampler_sample(plain, L.ctx, -1);
      const double t1 = now_s();
      llama_token t = llama_sampler_sample(chain, L.ctx, -1);
      const double t2 = now_s();
      greedy_us.push_back((t1 - t0) * 1e6);
      sample_us.push_back((t2 - t1) * 1e6);
      if (llama_vocab_is_eog(vocab, t)) break;
      out.push_back(t);
      b = llama_batch_get_one(&out.back(), 1);
    }
    llama_sampler_free(chain);
    llama_sampler_free(plain);
  }
  std::printf("{\"tokens\": [");
  for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? ", " : "", out[i]);
  std::printf("], \"sample_us\": %.3f, \"greedy_us\": %.3f}\n", median(sample_us), median(greedy_us));
  return 0;
}

int eog(const Args& a) {
  Loaded L;
  std::string err;
  if (!load_model(a, L, err)) return die(err);
  const llama_vocab* vocab = llama_model_get_vocab(L.model);
  std::printf("{\"eog\": [");
  bool first = true;
  for (llama_token t = 0; t < llama_vocab_n_tokens(vocab); ++t)
    if (llama_vocab_is_eog(vocab, t)) std::printf("%s%d", first ? "" : ", ", t), first = false;
  std::printf("]}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string err;
  if (!parse(argc, argv, a, err)) return die(err);
  llama_log_set(quiet_log, nullptr);
  const char* dir = std::getenv("HFS_GGML_BACKEND_DIR");
  if (dir && *dir) ggml_backend_load_all_from_path(dir);
  else ggml_backend_load_all();
  llama_backend_init();
  int rc;
  if (a.cmd == "bench") rc = bench(a);
  else if (a.cmd == "batched") rc = batched(a);
  else if (a.cmd == "logits") rc = logits(a);
  else if (a.cmd == "quantize") rc = quantize(a);
  else if (a.cmd == "grammar") rc = grammar(a);
  else if (a.cmd == "eog") rc = eog(a);
  else rc = die("unknown command " + a.cmd + " (bench, batched, logits, quantize, grammar, eog)");
  llama_backend_free();
  return rc;
}
