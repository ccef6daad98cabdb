// Runs an exported plan with a naive evaluator written here from the op semantics in ops.h (independent
// of src/ops), on the real stories260K checkpoint: the first-step logits after BOS must match the values
// llama2.c documents for this model, and a padded prefill chunk must agree with token-by-token decode.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "hfstatic/export.h"
#include "hfstatic/ext/metadata_keys.h"
#include "support/fixtures.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

struct T {
  std::vector<int64_t> shape;
  std::vector<float> f;  // all values held as float (ids too)
};

class NaiveEval {
 public:
  explicit NaiveEval(const ExportPlan& plan) {
    for (const auto& c : plan.constants) {
      if (c.type.dtype != DType::kF32) continue;  // u8 file constants are not read by the graph
      T t{c.type.shape.to_vector(), std::vector<float>(static_cast<size_t>(c.type.shape.numel()))};
      EXPECT_TRUE(c.produce(std::as_writable_bytes(std::span(t.f))).ok());
      consts_[c.name] = std::move(t);
    }
  }

  std::map<std::string, T> run(const MethodDef& m, std::map<std::string, T> env) {
    for (auto& [k, v] : consts_) env[k] = v;
    for (const NodeDef& n : m.nodes) {
      std::vector<const T*> in;
      for (const auto& name : n.inputs) {
        auto it = env.find(name);
        EXPECT_NE(it, env.end()) << "node " << n.op << " reads undefined " << name;
        in.push_back(it == env.end() ? nullptr : &it->second);
      }
      env[n.outputs[0]] = eval(n, in);
    }
    return env;
  }

 private:
  static float attr(const NodeDef& n, const char* k, double def = 0) {
    auto it = n.attrs.find(k);
    return it == n.attrs.end() ? static_cast<float>(def) : static_cast<float>(it->second.as_float());
  }

  T eval(const NodeDef& n, const std::vector<const T*>& in) {
    const std::string& op = n.op;
    if (op == "embedding") {
      const T& tab = *in[0];
      const int64_t H = tab.shape[1];
      T out{{1, in[1]->shape[1], H}, {}};
      for (float id : in[1]->f)
        out.f.insert(out.f.end(), tab.f.begin() + static_cast<int64_t>(id) * H, tab.f.begin() + (static_cast<int64_t>(id) + 1) * H);
      return out;
    }
    if (op == "rms_norm") {
      T out = *in[0];
      const size_t D = in[1]->f.size();
      const float eps = attr(n, "eps");
      const bool unit = n.attrs.count("unit_offset") && n.attrs.at("unit_offset").as_bool();
      for (size_t r = 0; r < out.f.size() / D; ++r) {
        double ss = 0;
        for (size_t j = 0; j < D; ++j) ss += double(out.f[r * D + j]) * out.f[r * D + j];
        const float inv = 1.0f / std::sqrt(static_cast<float>(ss / D) + eps);
        for (size_t j = 0; j < D; ++j) out.f[r * D + j] = out.f[r * D + j] * inv * ((unit ? 1.0f : 0.0f) + in[1]->f[j]);
      }
      return out;
    }
    if (op == "linear") {
      const T& x = *in[0];
      const T& w = *in[1];
      const int64_t N = w.shape[0], K = w.shape[1];
      T out{x.shape, {}};
      out.shape.back() = N;
      const size_t rows = x.f.size() / static_cast<size_t>(K);
      out.f.assign(rows * static_cast<size_t>(N), 0);
      for (size_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < N; ++o) {
          double acc = in.size() > 2 ? in[2]->f[static_cast<size_t>(o)] : 0.0;
          for (int64_t k = 0; k < K; ++k) acc += double(x.f[r * K + k]) * w.f[o * K + k];
          out.f[r * N + o] = static_cast<float>(acc);
        }
      return out;
    }
    if (op == "reshape") {
      T out = *in[0];
      out.shape.clear();
      for (const auto& v : n.attrs.at("shape").as_array()) out.shape.push_back(v.as_int());
      return out;
    }
    if (op == "add" || op == "mul") {
      T out = *in[0];
      for (size_t i = 0; i < out.f.size(); ++i) out.f[i] = op == "add" ? out.f[i] + in[1]->f[i] : out.f[i] * in[1]->f[i];
      return out;
    }
    if (op == "silu") {
      T out = *in[0];
      for (float& v : out.f) v = v / (1 + std::exp(-v));
      return out;
    }
    if (op == "rope") {  // HF rotate_half on the first R dims
      T out = *in[0];
      const int64_t Tn = out.shape[1], H = out.shape[2], D = out.shape[3];
      const size_t half = in[2]->f.size();
      for (int64_t t = 0; t < Tn; ++t)
        for (int64_t h = 0; h < H; ++h)
          for (size_t j = 0; j < half; ++j) {
            const float ang = in[1]->f[static_cast<size_t>(t)] * in[2]->f[j];
            float* row = &out.f[static_cast<size_t>((t * H + h) * D)];
            const float* src = &in[0]->f[static_cast<size_t>((t * H + h) * D)];
            row[j] = src[j] * std::cos(ang) - src[j + half] * std::sin(ang);
            row[j + half] = src[j + half] * std::cos(ang) + src[j] * std::sin(ang);
          }
      return out;
    }
    if (op == "kv_cache_write") {
      T cache = *in[0];  // [1, Hkv, S, D]
      const T& rows = *in[1];  // [1, T, Hkv, D]
      const int64_t Hkv = cache.shape[1], S = cache.shape[2], D = cache.shape[3];
      for (int64_t t = 0; t < rows.shape[1]; ++t) {
        const auto slot = static_cast<int64_t>(in[2]->f[static_cast<size_t>(t)]);
        if (slot < 0) continue;
        for (int64_t h = 0; h < Hkv; ++h)
          for (int64_t d = 0; d < D; ++d) cache.f[((h * S) + slot) * D + d] = rows.f[((t * Hkv) + h) * D + d];
      }
      return cache;
    }
    if (op == "attention") {
      const T& q = *in[0];
      const T& k = *in[1];
      const T& v = *in[2];
      const T& mask = *in[3];
      const int64_t Tn = q.shape[1], Hq = q.shape[2], D = q.shape[3], Hkv = k.shape[1], S = k.shape[2];
      const float scale = attr(n, "scale"), cap = attr(n, "softcap");
      T out{q.shape, std::vector<float>(q.f.size(), 0)};
      std::vector<double> p(static_cast<size_t>(S));
      for (int64_t t = 0; t < Tn; ++t)
        for (int64_t h = 0; h < Hq; ++h) {
          const int64_t kh = h / (Hq / Hkv);
          double mx = -1e300;
          for (int64_t s = 0; s < S; ++s) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += double(q.f[((t * Hq) + h) * D + d]) * k.f[((kh * S) + s) * D + d];
            double sc = dot * scale;
            if (cap > 0) sc = std::tanh(sc / cap) * cap;
            sc += mask.f[static_cast<size_t>(t * S + s)];
            p[static_cast<size_t>(s)] = sc;
            mx = std::max(mx, sc);
          }
          double sum = 0;
          for (double& x : p) sum += (x = std::exp(x - mx));
          for (int64_t d = 0; d < D; ++d) {
            double acc = 0;
            for (int64_t s = 0; s < S; ++s) acc += p[static_cast<size_t>(s)] / sum * v.f[((kh * S) + s) * D + d];
            out.f[((t * Hq) + h) * D + d] = static_cast<float>(acc);
          }
        }
      return out;
    }
    if (op == "gather") {  // axis 1 of [1, T, H]
      const T& x = *in[0];
      const int64_t H = x.shape[2];
      const auto row = static_cast<int64_t>(in[1]->f[0]);
      return T{{1, 1, H}, std::vector<float>(x.f.begin() + row * H, x.f.begin() + (row + 1) * H)};
    }
    ADD_FAILURE() << "naive evaluator: op " << op << " not implemented";
    return {};
  }

  std::map<std::string, T> consts_;
};

// Inputs for `tokens` at positions start.. (padded to Tn with slot -1 rows), global caches only.
std::map<std::string, T> step_inputs(const std::vector<int>& tokens, int start, int64_t Tn, int64_t S,
                                     const std::map<std::string, T>& caches) {
  std::map<std::string, T> env = caches;
  T ids{{1, Tn}, std::vector<float>(static_cast<size_t>(Tn), 0)}, pos = ids, slots{{Tn}, std::vector<float>(static_cast<size_t>(Tn), -1)};
  T mask{{1, 1, Tn, S}, std::vector<float>(static_cast<size_t>(Tn * S), keys::kMaskHidden)};
  for (size_t t = 0; t < tokens.size(); ++t) {
    ids.f[t] = static_cast<float>(tokens[t]);
    pos.f[t] = static_cast<float>(start + static_cast<int>(t));
    slots.f[t] = pos.f[t];
    for (int s = 0; s <= start + static_cast<int>(t); ++s) mask.f[t * static_cast<size_t>(S) + static_cast<size_t>(s)] = 0;
  }
  env[std::string(keys::kInputIds)] = ids;
  env[std::string(keys::kPositionIds)] = pos;
  env[std::string(keys::kLogitsIndex)] = T{{1}, {static_cast<float>(tokens.size() - 1)}};
  env[keys::cache_slots_name(keys::kLayerGlobal)] = slots;
  env[keys::attn_mask_name(keys::kLayerGlobal)] = mask;
  return env;
}

TEST(ExportEval, Stories260KMatchesLlama2c) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  ExportOptions opt;
  opt.prefill_chunk = 8;
  opt.context = 32;
  ASSERT_TRUE(test::fixture_exists(test::stories_dir())) << test::missing(test::stories_dir());
  auto plan = build_export_plan(test::stories_dir(), opt);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  NaiveEval ev(*plan);
  const MethodDef* decode = nullptr;
  const MethodDef* prefill = nullptr;
  for (const auto& m : plan->methods) {
    if (m.name == "decode") decode = &m;
    if (m.name == "prefill") prefill = &m;
  }
  ASSERT_TRUE(decode && prefill);
  const int64_t S = 32;
  std::map<std::string, T> caches;
  for (int l = 0; l < 5; ++l) {
    caches[keys::k_cache_name(l)] = T{{1, 4, S, 8}, std::vector<float>(4 * S * 8, 0)};
    caches[keys::v_cache_name(l)] = caches[keys::k_cache_name(l)];
  }
  auto carry = [&](const std::map<std::string, T>& env) {
    std::map<std::string, T> next;
    for (int l = 0; l < 5; ++l) {
      next[keys::k_cache_name(l)] = env.at(keys::k_cache_out_name(l));
      next[keys::v_cache_name(l)] = env.at(keys::v_cache_out_name(l));
    }
    return next;
  };

  // Token-by-token greedy decode from BOS.
  std::vector<int> seq = {1};
  std::vector<float> last_logits;
  auto dec_caches = caches;
  for (int step = 0; step < 5; ++step) {
    auto env = ev.run(*decode, step_inputs({seq.back()}, step, 1, S, dec_caches));
    const T& logits = env.at(std::string(keys::kLogits));
    ASSERT_EQ(logits.shape, (std::vector<int64_t>{1, 1, 512}));
    if (step == 0) {  // documented in the fixture's README (llama2.c run)
      const float want[] = {-6.22291f, 8.40434f, -6.22374f, -6.22254f, -6.22195f};
      for (int i = 0; i < 5; ++i) EXPECT_NEAR(logits.f[static_cast<size_t>(i)], want[i], 2e-4) << i;
    }
    last_logits = logits.f;
    seq.push_back(static_cast<int>(std::max_element(logits.f.begin(), logits.f.end()) - logits.f.begin()));
    dec_caches = carry(env);
  }

  // The same 5 tokens as one padded prefill chunk (C = 8): the last valid row's logits agree.
  std::vector<int> prompt(seq.begin(), seq.begin() + 5);
  auto env = ev.run(*prefill, step_inputs(prompt, 0, 8, S, caches));
  const T& logits = env.at(std::string(keys::kLogits));
  ASSERT_EQ(logits.f.size(), last_logits.size());
  for (size_t i = 0; i < logits.f.size(); ++i) ASSERT_NEAR(logits.f[i], last_logits[i], 1e-3) << i;
}

}  // namespace
}  // namespace hfs
