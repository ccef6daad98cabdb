#include "backends/cpu_fast/backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/step_profile.h"
#include "backends/cpu_fast/thread_pool.h"
#include "backends/cpu_fast/weight_formats.h"
#include "hfstatic/ext/backend_kernels.h"
#include "hfstatic/ext/ops.h"
#include "support/memory_constant_store.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

constexpr int64_t H = 64, HQ = 4, HKV = 2, D = 16, F = 96, V = 50, S = 16;

// Constants owned by the test, with what each one means for the reference.
struct Store : hfs::test::MemoryConstantStore {
  std::map<std::string, std::vector<float>> deq;  // what each constant means, for the reference
};

std::map<std::string, bool> g_is_int;  // constant name → integer format (reference rounds its input)

std::vector<float> randn(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Stores w [n, k] in `f`, recording its dequantized meaning.
void add_weight(Store& st, const std::string& name, DType f, int64_t n, int64_t k, uint32_t seed) {
  auto w = randn(static_cast<size_t>(n * k), seed, 0.3f);
  std::vector<float> deq(w.size());
  std::vector<uint8_t> b;
  switch (f) {
    case DType::kF32: b.resize(w.size() * 4); std::memcpy(b.data(), w.data(), b.size()); deq = w; break;
    case DType::kF16:
    case DType::kBF16:
      b.resize(w.size() * 2);
      for (size_t i = 0; i < w.size(); ++i) {
        uint16_t h = f == DType::kF16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
        std::memcpy(b.data() + 2 * i, &h, 2);
        deq[i] = f == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    case DType::kI8: {
      b.resize(w.size());
      std::vector<float> sc(static_cast<size_t>(n));
      quantize_i8_per_channel(w.data(), n, k, reinterpret_cast<int8_t*>(b.data()), sc.data());
      dequantize_i8_per_channel(reinterpret_cast<int8_t*>(b.data()), sc.data(), n, k, deq.data());
      ASSERT_TRUE(st.add(name + ".scale", {DType::kF32, {n}}, std::as_bytes(std::span(sc))).ok());
      break;
    }
    case DType::kQ8_0:
      b.resize(static_cast<size_t>(q8_0_bytes(n, k)));
      ASSERT_TRUE(quantize_q8_0(w.data(), n, k, b.data()).ok());
      dequantize_q8_0(b.data(), n, k, deq.data());
      break;
    default:
      b.resize(static_cast<size_t>(q4_0_bytes(n, k)));
      ASSERT_TRUE(quantize_q4_0(w.data(), n, k, b.data()).ok());
      dequantize_q4_0(b.data(), n, k, deq.data());
  }
  ASSERT_TRUE(st.add(name, {f, {n, k}}, std::as_bytes(std::span(b))).ok());
  st.deq[name] = deq;
  g_is_int[name] = f == DType::kI8 || f == DType::kQ8_0 || f == DType::kQ4_0;
}

struct Formats {
  DType embed, q, k, v, o, gate, up, down;
};

// One Llama-style block: embedding → rms_norm → q/k/v → rope → cache write → attention → o → residual
// → rms_norm → silu(gate)·up → down → residual.
MethodDef block(int64_t T, bool i8_v, bool i8_embed) {
  MethodDef m;
  m.name = "step";
  m.inputs = {{"ids", {DType::kI32, {1, T}}, IORole::kInput, ""},
              {"pos", {DType::kI32, {1, T}}, IORole::kInput, ""},
              {"slots", {DType::kI32, {T}}, IORole::kInput, ""},
              {"mask", {DType::kF32, {1, 1, T, S}}, IORole::kInput, ""},
              {"kc", {DType::kF16, {1, HKV, S, D}}, IORole::kState, ""},
              {"vc", {DType::kF16, {1, HKV, S, D}}, IORole::kState, ""}};
  auto node = [&](std::string op, std::vector<std::string> in, std::string out, Attrs a = {}) {
    m.nodes.push_back({std::move(op), std::move(in), {std::move(out)}, std::move(a)});
  };
  Attrs eps{{"eps", Value(1e-5)}};
  if (i8_embed)
    node("embedding", {"embed", "ids", "embed.scale"}, "x");  // gathered from the table's packed copy
  else
    node("embedding", {"embed", "ids"}, "x");
  node("rms_norm", {"x", "norm"}, "h", eps);
  node("linear", {"h", "wq", "bq"}, "q");
  node("linear", {"h", "wk"}, "k");
  if (i8_v)
    node("linear", {"h", "wv", "", "wv.scale"}, "v");
  else
    node("linear", {"h", "wv"}, "v");
  node("reshape", {"q"}, "q4", {{"shape", Value::int_array({1, T, HQ, D})}});
  node("reshape", {"k"}, "k4", {{"shape", Value::int_array({1, T, HKV, D})}});
  node("reshape", {"v"}, "v4", {{"shape", Value::int_array({1, T, -1, D})}});
  node("rope", {"q4", "pos", "inv_freq"}, "qr");
  node("rope", {"k4", "pos", "inv_freq"}, "kr");
  node("kv_cache_write", {"kc", "kr", "slots"}, "kc2");
  node("kv_cache_write", {"vc", "v4", "slots"}, "vc2");
  node("attention", {"qr", "kc2", "vc2", "mask"}, "a", {{"scale", Value(0.25)}});
  node("reshape", {"a"}, "a2", {{"shape", Value::int_array({1, T, HQ * D})}});
  node("linear", {"a2", "wo"}, "o");
  node("add", {"x", "o"}, "x2");
  node("rms_norm", {"x2", "norm"}, "h2", eps);
  node("linear", {"h2", "wg"}, "g");
  node("linear", {"h2", "wu"}, "u");
  node("silu", {"g"}, "sg");
  node("mul", {"sg", "u"}, "mlp");
  node("linear", {"mlp", "wd"}, "dn");
  node("add", {"x2", "dn"}, "out");
  m.outputs = {{"out", {DType::kF32, {1, T, H}}, IORole::kOutput, ""},
               {"kc2", {DType::kF16, {1, HKV, S, D}}, IORole::kState, "kc"},
               {"vc2", {DType::kF16, {1, HKV, S, D}}, IORole::kState, "vc"}};
  return m;
}

Subgraph subgraph_of(const MethodDef& m, const Store& st) {
  Subgraph sg;
  sg.nodes = m.nodes;
  sg.inputs = m.inputs;
  sg.outputs = m.outputs;
  sg.constants = &st;
  return sg;
}

// ---- independent reference (double) --------------------------------------------------------------
using Vec = std::vector<double>;
struct RefState {
  std::vector<float> kc = std::vector<float>(HKV * S * D, 0.0f), vc = std::vector<float>(HKV * S * D, 0.0f);
};

// Integer-weight linears see their input rounded to an int8 grid per 32-block (scale = max|x|/127):
// the reference applies the same rounding so the comparison can stay tight.
bool g_int_weights = false;

Vec quantized(const Vec& x, int64_t k) {
  Vec q(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(k); ++r)
    for (int64_t b0 = 0; b0 < k; b0 += 32) {
      float amax = 0;
      for (int64_t e = b0; e < std::min(k, b0 + 32); ++e) amax = std::max(amax, std::fabs(static_cast<float>(x[r * k + e])));
      const float s = amax / 127.0f, inv = s != 0 ? 1.0f / s : 0.0f;
      for (int64_t e = b0; e < std::min(k, b0 + 32); ++e)
        q[r * k + e] = double(std::nearbyint(static_cast<float>(x[r * k + e]) * inv)) * s;
    }
  return q;
}

Vec ref_linear(const Vec& x_in, const std::vector<float>& w, int64_t n, int64_t k, const std::vector<float>* b) {
  const Vec x = g_int_weights ? quantized(x_in, k) : x_in;
  const int64_t m = static_cast<int64_t>(x.size()) / k;
  Vec y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = b ? (*b)[static_cast<size_t>(j)] : 0.0;
      for (int64_t e = 0; e < k; ++e) s += x[i * k + e] * w[j * k + e];
      y[i * n + j] = s;
    }
  return y;
}
Vec ref_norm(const Vec& x, const std::vector<float>& w) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / H; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) ss += x[r * H + i] * x[r * H + i];
    const double inv = 1.0 / std::sqrt(ss / H + 1e-5);
    for (int64_t i = 0; i < H; ++i) y[r * H + i] = x[r * H + i] * inv * w[i];
  }
  return y;
}
Vec ref_rope(const Vec& x, const std::vector<int32_t>& pos, const std::vector<float>& inv, int64_t heads) {
  Vec y(x.size());
  const int64_t T = static_cast<int64_t>(pos.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < D / 2; ++i) {
        const double ang = double(pos[t]) * inv[i], c = std::cos(ang), s = std::sin(ang);
        const double x1 = x[(t * heads + h) * D + i], x2 = x[(t * heads + h) * D + i + D / 2];
        y[(t * heads + h) * D + i] = x1 * c - x2 * s;
        y[(t * heads + h) * D + i + D / 2] = x2 * c + x1 * s;
      }
  return y;
}

Vec lin(Store& st, const std::string& name, const Vec& x, int64_t n, int64_t k, const std::vector<float>* b) {
  g_int_weights = g_is_int[name];
  return ref_linear(x, st.deq[name], n, k, b);
}

Vec reference_step(Store& st, RefState& rs, const std::vector<int32_t>& ids, const std::vector<int32_t>& pos,
                   const std::vector<int32_t>& slots, const std::vector<float>& mask, const std::vector<float>& inv) {
  const int64_t T = static_cast<int64_t>(ids.size());
  Vec x(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < H; ++i) x[t * H + i] = st.deq["embed"][ids[t] * H + i];
  Vec h = ref_norm(x, st.deq["norm"]);
  Vec q = ref_rope(lin(st, "wq", h, HQ * D, H, &st.deq["bq"]), pos, inv, HQ);
  Vec k = ref_rope(lin(st, "wk", h, HKV * D, H, nullptr), pos, inv, HKV);
  Vec v = lin(st, "wv", h, HKV * D, H, nullptr);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hh = 0; hh < HKV; ++hh)
      for (int64_t e = 0; e < D; ++e) {
        rs.kc[(hh * S + slots[t]) * D + e] = f16_to_f32(f32_to_f16(static_cast<float>(k[(t * HKV + hh) * D + e])));
        rs.vc[(hh * S + slots[t]) * D + e] = f16_to_f32(f32_to_f16(static_cast<float>(v[(t * HKV + hh) * D + e])));
      }
  Vec a(static_cast<size_t>(T * HQ * D), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hq = 0; hq < HQ; ++hq) {
      const int64_t kh = hq / (HQ / HKV);
      Vec sc(S);
      double mx = -1e300;
      for (int64_t s = 0; s < S; ++s) {
        double dot = 0;
        for (int64_t e = 0; e < D; ++e) dot += q[(t * HQ + hq) * D + e] * rs.kc[(kh * S + s) * D + e];
        sc[s] = dot * 0.25 + mask[t * S + s];
        mx = std::max(mx, sc[s]);
      }
      double sum = 0;
      for (auto& z : sc) sum += (z = std::exp(z - mx));
      for (int64_t s = 0; s < S; ++s)
        for (int64_t e = 0; e < D; ++e) a[(t * HQ + hq) * D + e] += sc[s] / sum * rs.vc[(kh * S + s) * D + e];
    }
  Vec o = lin(st, "wo", a, H, HQ * D, nullptr);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  Vec h2 = ref_norm(x, st.deq["norm"]);
  Vec g = lin(st, "wg", h2, F, H, nullptr), u = lin(st, "wu", h2, F, H, nullptr);
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
  Vec dn = lin(st, "wd", g, H, F, nullptr);
  for (size_t i = 0; i < x.size(); ++i) x[i] += dn[i];
  return x;
}

// copied: the store acts as a file mapping, so cpu_fast copies float constants (packs integer ones as
// always) and then must not read the originals: they are scribbled over between the decode step's compile
// and its execute.
void run_block(const Formats& f, double tol, int threads, bool copied = false) {
  Store st;
  st.releases = copied;
  add_weight(st, "embed", f.embed, V, H, 1);
  add_weight(st, "wq", f.q, HQ * D, H, 2);
  add_weight(st, "wk", f.k, HKV * D, H, 3);
  add_weight(st, "wv", f.v, HKV * D, H, 4);
  add_weight(st, "wo", f.o, H, HQ * D, 5);
  add_weight(st, "wg", f.gate, F, H, 6);
  add_weight(st, "wu", f.up, F, H, 7);
  add_weight(st, "wd", f.down, H, F, 8);
  auto norm = randn(H, 9, 0.2f);
  for (auto& x : norm) x += 1.0f;
  auto bq = randn(HQ * D, 10, 0.1f);
  std::vector<float> inv(D / 2);
  for (int64_t i = 0; i < D / 2; ++i) inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / D));
  ASSERT_TRUE(st.add("norm", {DType::kF32, {H}}, std::as_bytes(std::span(norm))).ok());
  ASSERT_TRUE(st.add("bq", {DType::kF32, {HQ * D}}, std::as_bytes(std::span(bq))).ok());
  ASSERT_TRUE(st.add("inv_freq", {DType::kF32, {D / 2}}, std::as_bytes(std::span(inv))).ok());
  st.deq["norm"] = norm;
  st.deq["bq"] = bq;

  CpuFastBackend be(threads);
  std::vector<uint16_t> kc(HKV * S * D, 0), vc(HKV * S * D, 0);
  RefState rs;
  // Prefill 3 tokens into slots 0..2, then decode one token into slot 3 with the same caches.
  for (int64_t T : {3, 1}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    const bool i8 = f.v == DType::kI8;
    MethodDef m = block(T, i8, f.embed == DType::kI8);
    auto del = be.compile(subgraph_of(m, st));
    ASSERT_TRUE(del.ok()) << del.error().to_string();
    if (copied && T == 1)  // the weights (and an i8 weight's scale) are packed or copied; norms and biases are not
      st.scribble({"embed", "embed.scale", "wq", "wk", "wv", "wv.scale", "wo", "wg", "wu", "wd"});
    std::vector<int32_t> ids, pos, slots;
    const int64_t start = T == 3 ? 0 : 3;
    for (int64_t t = 0; t < T; ++t) {
      ids.push_back(static_cast<int32_t>((7 * (start + t) + 3) % V));
      pos.push_back(static_cast<int32_t>(start + t));
      slots.push_back(static_cast<int32_t>(start + t));
    }
    std::vector<float> mask(static_cast<size_t>(T * S), -1e30f);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s <= start + t; ++s) mask[t * S + s] = 0.0f;
    std::vector<float> out(static_cast<size_t>(T * H));
    std::vector<TensorView> in = {TensorView(ids.data(), DType::kI32, {1, T}), TensorView(pos.data(), DType::kI32, {1, T}),
                                  TensorView(slots.data(), DType::kI32, {T}),
                                  TensorView(mask.data(), DType::kF32, {1, 1, T, S}),
                                  TensorView(kc.data(), DType::kF16, {1, HKV, S, D}),
                                  TensorView(vc.data(), DType::kF16, {1, HKV, S, D})};
    std::vector<TensorView> outs = {TensorView(out.data(), DType::kF32, {1, T, H}), in[4], in[5]};
    Status stt = (*del)->execute(in, outs);
    ASSERT_TRUE(stt.ok()) << stt.error().to_string();
    Vec ref = reference_step(st, rs, ids, pos, slots, mask, inv);
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      num += (out[i] - ref[i]) * (out[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(num / den), tol);
    for (size_t i = 0; i < kc.size(); ++i) {
      ASSERT_NEAR(f16_to_f32(kc[i]), rs.kc[i], 4e-3 + tol * 8 * std::fabs(rs.kc[i])) << "k cache " << i;
      ASSERT_NEAR(f16_to_f32(vc[i]), rs.vc[i], 4e-3 + tol * 8 * std::fabs(rs.vc[i])) << "v cache " << i;
    }
  }
}

TEST(CpuFastBackend, FloatWeightBlockMatchesReference) {
  for (bool copied : {false, true}) {
    SCOPED_TRACE(copied ? "float constants copied" : "float constants read in place");
    run_block({DType::kBF16, DType::kF32, DType::kF16, DType::kF32, DType::kF16, DType::kBF16, DType::kF32, DType::kF32},
              2e-4, 2, copied);
  }
}

TEST(CpuFastBackend, QuantizedWeightBlockMatchesReference) {
  // The reference rounds activations like the kernels; what remains is f32 vs double and rare
  // one-step rounding flips at exact ties.
  for (int threads : {1, 2})
    run_block({DType::kF16, DType::kQ4_0, DType::kQ8_0, DType::kI8, DType::kQ4_0, DType::kQ4_0, DType::kQ8_0,
               DType::kQ4_0},
              1e-3, threads);
}

TEST(CpuFastBackend, Int8EmbeddingBlockMatchesReference) {
  run_block({DType::kI8, DType::kQ4_0, DType::kQ8_0, DType::kI8, DType::kQ4_0, DType::kQ4_0, DType::kQ8_0, DType::kQ4_0},
            1e-3, 2, /*copied=*/true);
}

// HFS_PROFILE: each delegate prints its per-kind step times when destroyed (prefill and decode here),
// naming the fused kinds; without the variable nothing is printed.
// A program's methods each get a backend; backends of one thread count share one pool, so the methods do not
// each bring a worker that competes for the same cores. Another count gets its own pool.
TEST(CpuFastBackend, BackendsOfOneThreadCountShareOnePool) {
  CpuFastBackend a(2), b(2), c(3);
  EXPECT_EQ(a.pool(), b.pool());
  EXPECT_NE(a.pool(), c.pool());
  EXPECT_EQ(a.threads(), 2);
  EXPECT_EQ(c.threads(), 3);
  auto d = make_cpu_fast_backend(Value());  // 0 threads: one per CPU, the same pool as asking for that count
  ASSERT_TRUE(d.ok()) << d.error().message();
  CpuFastBackend e(ThreadPool::default_threads());
  EXPECT_EQ(static_cast<CpuFastBackend&>(**d).pool(), e.pool());
}

TEST(CpuFastBackend, ProfileReportsStepTimesByKindOnlyWhenAsked) {
  const Formats f{DType::kF32, DType::kF32, DType::kF32, DType::kF32, DType::kF32, DType::kF32, DType::kF32, DType::kF32};
  testing::internal::CaptureStderr();
  run_block(f, 2e-4, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  setenv("HFS_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  run_block(f, 2e-4, 2);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("HFS_PROFILE");
  size_t reports = 0;
  for (size_t at = err.find("cpu_fast profile: "); at != std::string::npos; at = err.find("cpu_fast profile: ", at + 1))
    ++reports;
  EXPECT_EQ(reports, 2u) << err;
  EXPECT_NE(err.find(" 1 executes"), std::string::npos) << err;
  EXPECT_NE(err.find(" 2 threads\n"), std::string::npos) << err;
  EXPECT_NE(err.find(" busy/job "), std::string::npos) << err;
  for (const char* kind : {"linear_glu", "linear_batch", "linear_batched", "attention", "rms_norm", "rope_kv_write", "embedding",
                           "fused_away"})
    EXPECT_NE(err.find(std::string("  ") + kind + " "), std::string::npos) << kind << " missing in\n" << err;
  // RoPE of q and k and both cache writes run as one group (the kinds' names are followed by spaces).
  EXPECT_EQ(err.find("  rope "), std::string::npos) << err;
  EXPECT_EQ(err.find("  kv_cache_write "), std::string::npos) << err;
}

// RoPE of q and k and the two cache writes run as one job over the chunk's rows (one task per thread
// once the chunk is large enough): the rotated q and both caches against a double RoPE (HF rotate-half)
// and f16 rounding, and 2 threads bit-identical to 1. Slots skip one (0, 2, 4, ...) so a row written to
// the wrong slot shows; the unwritten slots must stay as they were.
TEST(CpuFastBackend, RopeAndCacheWritesOfAChunkRunAsOneJob) {
  constexpr int64_t T = 64, Hq = 8, Hkv = 4, Dh = 32, Sl = 2 * T;
  MethodDef m;
  m.name = "rope_kv";
  m.inputs = {{"q", {DType::kF32, {1, T, Hq, Dh}}, IORole::kInput, ""},
              {"k", {DType::kF32, {1, T, Hkv, Dh}}, IORole::kInput, ""},
              {"v", {DType::kF32, {1, T, Hkv, Dh}}, IORole::kInput, ""},
              {"pos", {DType::kI32, {1, T}}, IORole::kInput, ""},
              {"slots", {DType::kI32, {T}}, IORole::kInput, ""},
              {"kc", {DType::kF16, {1, Hkv, Sl, Dh}}, IORole::kState, ""},
              {"vc", {DType::kF16, {1, Hkv, Sl, Dh}}, IORole::kState, ""}};
  const std::vector<NodeDef> write_v_last = {{"rope", {"q", "pos", "inv_freq"}, {"qr"}, {}},
                                             {"rope", {"k", "pos", "inv_freq"}, {"kr"}, {}},
                                             {"kv_cache_write", {"kc", "kr", "slots"}, {"kc2"}, {}},
                                             {"kv_cache_write", {"vc", "v", "slots"}, {"vc2"}, {}}};
  // The same steps with a cache write first: the group's rows come from a write's source rows, not from
  // its cache operand ([1, Hkv, S, D], whose dim 1 is not T).
  const std::vector<NodeDef> write_v_first = {write_v_last[3], write_v_last[0], write_v_last[1], write_v_last[2]};
  m.outputs = {{"qr", {DType::kF32, {1, T, Hq, Dh}}, IORole::kOutput, ""},
               {"kc2", {DType::kF16, {1, Hkv, Sl, Dh}}, IORole::kState, "kc"},
               {"vc2", {DType::kF16, {1, Hkv, Sl, Dh}}, IORole::kState, "vc"}};
  Store st;
  std::vector<float> inv(Dh / 2);
  for (int64_t i = 0; i < Dh / 2; ++i) inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / Dh));
  ASSERT_TRUE(st.add("inv_freq", {DType::kF32, {Dh / 2}}, std::as_bytes(std::span(inv))).ok());
  const auto q = randn(T * Hq * Dh, 21, 1.0f), k = randn(T * Hkv * Dh, 22, 1.0f), v = randn(T * Hkv * Dh, 23, 1.0f);
  std::vector<int32_t> pos(T), slots(T);
  for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>(100 + t), slots[t] = static_cast<int32_t>(2 * t);
  auto rope_ref = [&](const std::vector<float>& x, int64_t heads, int64_t t, int64_t h, int64_t i) {
    const float* r = &x[static_cast<size_t>((t * heads + h) * Dh)];
    const double a = pos[t] * static_cast<double>(inv[i % (Dh / 2)]);
    return i < Dh / 2 ? r[i] * std::cos(a) - r[i + Dh / 2] * std::sin(a) : r[i] * std::cos(a) + r[i - Dh / 2] * std::sin(a);
  };
  std::vector<float> qr_first;
  std::vector<uint16_t> kc_first, vc_first;
  for (int pass = 0; pass < 4; ++pass) {
    const int threads = 1 + pass % 2;
    m.nodes = pass < 2 ? write_v_last : write_v_first;
    SCOPED_TRACE(std::to_string(threads) + " threads, v written " + (pass < 2 ? "last" : "first"));
    CpuFastBackend be(threads);
    auto del = be.compile(subgraph_of(m, st));
    ASSERT_TRUE(del.ok()) << del.error().to_string();
    std::vector<float> qr(q.size());
    const uint16_t kUnwritten = f32_to_f16(7.0f);
    std::vector<uint16_t> kc(Hkv * Sl * Dh, kUnwritten), vc(kc.size(), kUnwritten);
    std::vector<TensorView> in = {TensorView(const_cast<float*>(q.data()), DType::kF32, {1, T, Hq, Dh}),
                                  TensorView(const_cast<float*>(k.data()), DType::kF32, {1, T, Hkv, Dh}),
                                  TensorView(const_cast<float*>(v.data()), DType::kF32, {1, T, Hkv, Dh}),
                                  TensorView(pos.data(), DType::kI32, {1, T}), TensorView(slots.data(), DType::kI32, {T}),
                                  TensorView(kc.data(), DType::kF16, {1, Hkv, Sl, Dh}),
                                  TensorView(vc.data(), DType::kF16, {1, Hkv, Sl, Dh})};
    std::vector<TensorView> outs = {TensorView(qr.data(), DType::kF32, {1, T, Hq, Dh}), in[5], in[6]};
    Status run = (*del)->execute(in, outs);
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < Dh; ++i)
          ASSERT_NEAR(qr[static_cast<size_t>((t * Hq + h) * Dh + i)], rope_ref(q, Hq, t, h, i), 2e-5) << t << " " << h << " " << i;
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t sl = 0; sl < Sl; ++sl)
        for (int64_t i = 0; i < Dh; ++i) {
          const size_t c = static_cast<size_t>((h * Sl + sl) * Dh + i);
          if (sl % 2 == 1) {
            ASSERT_EQ(kc[c], kUnwritten);
            ASSERT_EQ(vc[c], kUnwritten);
            continue;
          }
          const int64_t t = sl / 2;
          ASSERT_NEAR(f16_to_f32(kc[c]), rope_ref(k, Hkv, t, h, i), 2e-3) << "k " << t << " " << h << " " << i;
          ASSERT_EQ(vc[c], f32_to_f16(v[static_cast<size_t>((t * Hkv + h) * Dh + i)])) << "v " << t << " " << h << " " << i;
        }
    if (pass == 0) {
      qr_first = qr, kc_first = kc, vc_first = vc;
    } else {
      EXPECT_EQ(qr, qr_first);
      EXPECT_EQ(kc, kc_first);
      EXPECT_EQ(vc, vc_first);
    }
  }
}

// int8 caches: kv_scale_write then kv_cache_write (the exported graph's order), K and V, on cpu_fast at 1 and
// 2 threads: every scale and cache byte equals the reference ops' (cpu_ref), unwritten slots untouched. The
// chunk has rows of all zeros (scale 0, q 0) and a pad row (slot −1).
TEST(CpuFastBackend, Int8CacheWritesEqualTheReferenceBytes) {
  constexpr int64_t T = 64, Hkv = 2, Dh = 32, Sl = 2 * T + 1;
  MethodDef m;
  m.name = "kv_int8";
  m.inputs = {{"k", {DType::kF32, {1, T, Hkv, Dh}}, IORole::kInput, ""},
              {"v", {DType::kF32, {1, T, Hkv, Dh}}, IORole::kInput, ""},
              {"slots", {DType::kI32, {T}}, IORole::kInput, ""},
              {"kc", {DType::kI8, {1, Hkv, Sl, Dh}}, IORole::kState, ""},
              {"vc", {DType::kI8, {1, Hkv, Sl, Dh}}, IORole::kState, ""},
              {"ks", {DType::kF32, {1, Hkv, Sl}}, IORole::kState, ""},
              {"vs", {DType::kF32, {1, Hkv, Sl}}, IORole::kState, ""}};
  m.nodes = {{"kv_scale_write", {"ks", "k", "slots"}, {"ks2"}, {}},
             {"kv_scale_write", {"vs", "v", "slots"}, {"vs2"}, {}},
             {"kv_cache_write", {"kc", "k", "slots", "ks2"}, {"kc2"}, {}},
             {"kv_cache_write", {"vc", "v", "slots", "vs2"}, {"vc2"}, {}}};
  m.outputs = {{"kc2", {DType::kI8, {1, Hkv, Sl, Dh}}, IORole::kState, "kc"},
               {"vc2", {DType::kI8, {1, Hkv, Sl, Dh}}, IORole::kState, "vc"},
               {"ks2", {DType::kF32, {1, Hkv, Sl}}, IORole::kState, "ks"},
               {"vs2", {DType::kF32, {1, Hkv, Sl}}, IORole::kState, "vs"}};
  Store st;
  auto k = randn(T * Hkv * Dh, 31, 1.0f), v = randn(T * Hkv * Dh, 32, 3.0f);
  std::fill(v.begin() + 5 * Hkv * Dh, v.begin() + 6 * Hkv * Dh, 0.0f);  // row 5: zero rows
  std::vector<int32_t> slots(T);
  for (int64_t t = 0; t < T; ++t) slots[t] = static_cast<int32_t>(2 * t + 1);
  slots[T - 1] = -1;
  // The reference: the registry's kernels, one node after another.
  std::vector<int8_t> kc_ref(Hkv * Sl * Dh, int8_t{9}), vc_ref(kc_ref);
  std::vector<float> ks_ref(Hkv * Sl, 5.0f), vs_ref(ks_ref);
  const TensorView kv(k.data(), DType::kF32, {1, T, Hkv, Dh}), vv(v.data(), DType::kF32, {1, T, Hkv, Dh}),
      sv(slots.data(), DType::kI32, {T});
  const TensorView kcr(kc_ref.data(), DType::kI8, {1, Hkv, Sl, Dh}), vcr(vc_ref.data(), DType::kI8, {1, Hkv, Sl, Dh}),
      ksr(ks_ref.data(), DType::kF32, {1, Hkv, Sl}), vsr(vs_ref.data(), DType::kF32, {1, Hkv, Sl});
  const TensorView a0[] = {ksr, kv, sv}, a1[] = {vsr, vv, sv}, a2[] = {kcr, kv, sv, ksr}, a3[] = {vcr, vv, sv, vsr};
  const TensorView o0[] = {ksr}, o1[] = {vsr}, o2[] = {kcr}, o3[] = {vcr};
  ASSERT_TRUE(run_reference(m.nodes[0], a0, o0).ok());
  ASSERT_TRUE(run_reference(m.nodes[1], a1, o1).ok());
  ASSERT_TRUE(run_reference(m.nodes[2], a2, o2).ok());
  ASSERT_TRUE(run_reference(m.nodes[3], a3, o3).ok());
  EXPECT_EQ(vs_ref[static_cast<size_t>(0 * Sl + 11)], 0.0f);  // row 5 (slot 11): scale 0
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    CpuFastBackend be(threads);
    auto del = be.compile(subgraph_of(m, st));  // fails if cpu_fast did not take every node
    ASSERT_TRUE(del.ok()) << del.error().to_string();
    std::vector<int8_t> kc(kc_ref.size(), int8_t{9}), vc(kc);
    std::vector<float> ks(ks_ref.size(), 5.0f), vs(ks);
    std::vector<TensorView> in = {kv, vv, sv, TensorView(kc.data(), DType::kI8, {1, Hkv, Sl, Dh}),
                                  TensorView(vc.data(), DType::kI8, {1, Hkv, Sl, Dh}),
                                  TensorView(ks.data(), DType::kF32, {1, Hkv, Sl}), TensorView(vs.data(), DType::kF32, {1, Hkv, Sl})};
    std::vector<TensorView> outs = {in[3], in[4], in[5], in[6]};
    Status run = (*del)->execute(in, outs);
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    EXPECT_EQ(kc, kc_ref);
    EXPECT_EQ(vc, vc_ref);
    EXPECT_EQ(ks, ks_ref);
    EXPECT_EQ(vs, vs_ref);
  }
}

// A 128-row prefill chunk's float-path residual add and RMSNorm ([128, 576], SmolLM2's width) run as pool
// jobs on 2 threads (the profile's jobs column), against a double reference, and bit-identical to 1 thread.
TEST(CpuFastBackend, ResidualAddAndNormOfAPrefillChunkSplitOverThreads) {
  constexpr int64_t T = 128, W = 576;
  constexpr double kEps = 1e-5;
  MethodDef m;
  m.name = "add_norm";
  m.inputs = {{"x", {DType::kF32, {1, T, W}}, IORole::kInput, ""}, {"r", {DType::kF32, {1, T, W}}, IORole::kInput, ""}};
  m.nodes = {{"add", {"x", "r"}, {"h"}, {}}, {"rms_norm", {"h", "norm"}, {"n"}, {{"eps", Value(kEps)}}}};
  m.outputs = {{"h", {DType::kF32, {1, T, W}}, IORole::kOutput, ""}, {"n", {DType::kF32, {1, T, W}}, IORole::kOutput, ""}};
  Store st;
  auto norm = randn(W, 31, 0.2f);
  for (auto& v : norm) v += 1.0f;
  ASSERT_TRUE(st.add("norm", {DType::kF32, {W}}, std::as_bytes(std::span(norm))).ok());
  const auto x = randn(T * W, 32, 1.0f), r = randn(T * W, 33, 0.5f);
  std::vector<float> h1, n1;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    setenv("HFS_PROFILE", "1", 1);
    testing::internal::CaptureStderr();
    std::vector<float> h(x.size()), n(x.size());
    {
      CpuFastBackend be(threads);
      auto del = be.compile(subgraph_of(m, st));
      ASSERT_TRUE(del.ok()) << del.error().to_string();
      std::vector<TensorView> in = {TensorView(const_cast<float*>(x.data()), DType::kF32, {1, T, W}),
                                    TensorView(const_cast<float*>(r.data()), DType::kF32, {1, T, W})};
      std::vector<TensorView> outs = {TensorView(h.data(), DType::kF32, {1, T, W}), TensorView(n.data(), DType::kF32, {1, T, W})};
      Status run = (*del)->execute(in, outs);
      ASSERT_TRUE(run.ok()) << run.error().to_string();
    }
    const std::string err = testing::internal::GetCapturedStderr();
    unsetenv("HFS_PROFILE");
    for (int64_t t = 0; t < T; ++t) {
      double ss = 0;
      for (int64_t i = 0; i < W; ++i) {
        const double v = static_cast<double>(x[t * W + i]) + r[t * W + i];
        ss += v * v;
      }
      const double inv = 1.0 / std::sqrt(ss / W + kEps);
      for (int64_t i = 0; i < W; ++i) {
        const double v = static_cast<double>(x[t * W + i]) + r[t * W + i];
        ASSERT_NEAR(h[t * W + i], v, 1e-6) << t << " " << i;
        ASSERT_NEAR(n[t * W + i], v * inv * norm[i], 2e-5) << t << " " << i;
      }
    }
    if (threads == 1) {
      h1 = h, n1 = n;
      continue;
    }
    EXPECT_EQ(h, h1);
    EXPECT_EQ(n, n1);
    // "  <kind>  <ms>  <%>  <calls>  <jobs> ...": each step ran as one pool job.
    for (const char* kind : {"  add ", "  rms_norm "}) {
      const size_t at = err.find(kind);
      ASSERT_NE(at, std::string::npos) << kind << " missing in\n" << err;
      std::istringstream row(err.substr(at, err.find('\n', at) - at));
      std::string name, pct;
      double ms = 0;
      int calls = 0, jobs = 0;
      row >> name >> ms >> pct >> calls >> jobs;
      EXPECT_EQ(calls, 1) << err;
      EXPECT_EQ(jobs, 1) << err;
    }
  }
}

// Integer linears run the RMSNorm before them (and the residual add before that) inside their activation
// quantization job: the profile of the quantized block has no rms_norm kind, and one add per execute is
// left (the block's last, which no norm follows). QuantizedWeightBlockMatchesReference checks the values.
TEST(CpuFastBackend, IntegerLinearRunsTheNormAndResidualAddBeforeIt) {
  setenv("HFS_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  run_block({DType::kF16, DType::kQ4_0, DType::kQ8_0, DType::kI8, DType::kQ4_0, DType::kQ4_0, DType::kQ8_0, DType::kQ4_0},
            1e-3, 2);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("HFS_PROFILE");
  EXPECT_EQ(err.find("  rms_norm "), std::string::npos) << err;
  EXPECT_NE(err.find("  fused_away "), std::string::npos) << err;
  // "  add   <ms>   <%>   1   ..." in both the prefill and the decode delegate's table: calls = 1.
  size_t adds = 0;
  for (size_t at = err.find("  add "); at != std::string::npos; at = err.find("  add ", at + 1)) {
    std::istringstream row(err.substr(at, err.find('\n', at) - at));
    std::string kind, pct;
    double ms = 0;
    int calls = 0;
    row >> kind >> ms >> pct >> calls;
    EXPECT_EQ(calls, 1) << err;
    ++adds;
  }
  EXPECT_EQ(adds, 2u) << err;
}

// Hand-computed: linear has 3.5 ms over 3 calls with 6 jobs of 2.4 ms wall and 4.0 ms busy, so 68.6 % of
// its time in jobs and 1.67 threads busy in them; attention ran no job.
TEST(CpuFastStepProfile, SumsStepsOfOneKindAndListsTheLargestFirst) {
  StepProfile p;
  EXPECT_FALSE(p.on());
  p.enable({"linear", "attention", "linear"});
  p.set_threads(2);
  p.count_execute();
  p.add(0, 0.001, {2, 800'000, 1'600'000, 1});  // jobs, wall ns, busy ns, workers woken
  p.add(1, 0.004, {});
  p.add(2, 0.002, {4, 1'600'000, 2'400'000, 0});
  p.add(2, 0.0005, {});
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  p.report(f);
  std::rewind(f);
  char buf[1024] = {};
  const size_t got = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string out(buf, got);
  EXPECT_EQ(out,
            "cpu_fast profile: 3 steps, 1 executes, 7.5 ms in steps, 2 threads\n"
            "  kind                         ms      %   calls   jobs  in jobs  busy/job  woke\n"
            "  attention                  4.00  53.3%       1      0        -         -     -\n"
            "  linear                     3.50  46.7%       3      6    68.6%      1.67     1\n");
}

TEST(CpuFastBackend, SupportsAndSettings) {
  CpuFastBackend be(1);
  TensorType x{DType::kF32, {1, 4, 64}}, wq4{DType::kQ4_0, {32, 64}}, wbad{DType::kQ4_0, {32, 48}}, wi8{DType::kI8, {32, 64}},
      sc{DType::kF32, {32}}, ids{DType::kI32, {1, 4}};
  NodeDef lin{"linear", {"x", "w"}, {"y"}, {}};
  std::vector<const TensorType*> t1 = {&x, &wq4};
  EXPECT_TRUE(be.supports(lin, t1));
  std::vector<const TensorType*> t2 = {&x, &wbad};
  EXPECT_FALSE(be.supports(lin, t2));
  std::vector<const TensorType*> t3 = {&x, &wi8};
  EXPECT_FALSE(be.supports(lin, t3));  // i8 needs its scale operand
  std::vector<const TensorType*> t4 = {&x, &wi8, nullptr, &sc};
  EXPECT_TRUE(be.supports(lin, t4));
  NodeDef gather{"gather", {"x", "i"}, {"y"}, {}};
  std::vector<const TensorType*> t5 = {&x, &ids};
  EXPECT_FALSE(be.supports(gather, t5));

  Value s = Value::object();
  s.set("threads", Value(3));
  auto b = make_cpu_fast_backend(s);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(static_cast<CpuFastBackend&>(**b).threads(), 3);
  Value bad = Value::object();
  bad.set("thread", Value(2));
  auto e = make_cpu_fast_backend(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("unknown setting 'thread'"), std::string::npos);
  EXPECT_NE(e.error().message().find("(known: threads, deterministic)"), std::string::npos);
  bad = Value::object();
  bad.set("threads", Value("two"));
  EXPECT_FALSE(make_cpu_fast_backend(bad).ok());
  // "deterministic": a boolean (false: the float panel GEMM for prefill, docs/determinism.md).
  Value nd = Value::object();
  nd.set("deterministic", Value(false));
  EXPECT_TRUE(make_cpu_fast_backend(nd).ok());
  bad = Value::object();
  bad.set("deterministic", Value(0));
  auto d = make_cpu_fast_backend(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("'deterministic' must be true or false, got 0"), std::string::npos)
      << d.error().message();
  EXPECT_NE(std::find(registered_backends().begin(), registered_backends().end(), "cpu_fast"),
            registered_backends().end());
  // Reports name the dispatch level the kernels run (hfstatic/ext/backend_kernels.h).
  EXPECT_EQ(backend_kernels("cpu_fast"), std::string(isa_name(active_isa())));
  EXPECT_EQ(backend_kernels("no_such_backend"), "");
}

TEST(CpuFastBackend, CompileAndExecuteErrorsNameTheProblem) {
  Store st;
  add_weight(st, "embed", DType::kF32, V, H, 1);
  MethodDef m;
  m.name = "e";
  m.inputs = {{"ids", {DType::kI32, {1, 2}}, IORole::kInput, ""}};
  m.nodes = {{"embedding", {"embed", "ids"}, {"x"}, {}}};
  m.outputs = {{"x", {DType::kF32, {1, 2, H}}, IORole::kOutput, ""}};
  CpuFastBackend be(1);
  auto del = be.compile(subgraph_of(m, st));
  ASSERT_TRUE(del.ok()) << del.error().to_string();
  std::vector<int32_t> ids = {3, V + 5};
  std::vector<float> out(2 * H);
  std::vector<TensorView> in = {TensorView(ids.data(), DType::kI32, {1, 2})};
  std::vector<TensorView> outs = {TensorView(out.data(), DType::kF32, {1, 2, H})};
  Status s = (*del)->execute(in, outs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("token id 55"), std::string::npos) << s.error().to_string();
  EXPECT_NE(s.error().message().find("embedding"), std::string::npos);
  // Wrong input shape.
  std::vector<TensorView> bad_in = {TensorView(ids.data(), DType::kI32, {1, 1})};
  s = (*del)->execute(bad_in, outs);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kBadBinding);
  // Undefined value.
  m.nodes[0].inputs[0] = "nope";
  auto bad = be.compile(subgraph_of(m, st));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'nope'"), std::string::npos);
}

}  // namespace
}  // namespace hfs::cpu_fast
