// attention: hand-computed softmax-weighted averages (plain, masked, softcapped, grouped-query), a fully
// masked row giving a finite uniform average, a differential test against naive double attention with
// f32 and f16 caches, and the rule.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"

namespace hfs {
namespace {

using optest::expect_error;
using optest::infer;
using optest::run;

constexpr float kHidden = -1e30f;

// T = 1, Hq = Hkv = 1, D = 1, S = 2.
float attend_1d(float q, float k0, float k1, float v0, float v1, float m0, float m1, const Attrs& attrs) {
  float qv[] = {q}, k[] = {k0, k1}, v[] = {v0, v1}, mask[] = {m0, m1}, out = NAN;
  Status s = run("attention", attrs,
                 {TensorView(qv, DType::kF32, {1, 1, 1, 1}), TensorView(k, DType::kF32, {1, 1, 2, 1}),
                  TensorView(v, DType::kF32, {1, 1, 2, 1}), TensorView(mask, DType::kF32, {1, 1, 1, 2})},
                 {TensorView(&out, DType::kF32, {1, 1, 1, 1})});
  EXPECT_TRUE(s.ok());
  return out;
}

TEST(Attention, HandComputed) {
  const Attrs one{{"scale", Value(1.0)}};
  // scores [0, ln 3] -> p = [1/4, 3/4]; v = [4, 8] -> 4/4 + 8 * 3/4 = 7
  EXPECT_NEAR(attend_1d(1, 0, std::log(3.0f), 4, 8, 0, 0, one), 7.0, 1e-5);
  // scale 0.5 with k1 = 2 ln 3 gives the same scores -> 7
  EXPECT_NEAR(attend_1d(1, 0, 2 * std::log(3.0f), 4, 8, 0, 0, {{"scale", Value(0.5)}}), 7.0, 1e-5);
  // mask hides slot 1 -> p = [1, 0] -> 4
  EXPECT_EQ(attend_1d(1, 0, std::log(3.0f), 4, 8, 0, kHidden, one), 4.0f);
  // additive mask values shift scores: mask [ln 3, 0] on equal scores -> p = [3/4, 1/4] -> 3 + 2 = 5
  EXPECT_NEAR(attend_1d(1, 0, 0, 4, 8, std::log(3.0f), 0, one), 5.0, 1e-5);
  // softcap 1: scores [0, 2] -> [tanh 0, tanh 2] = [0, 0.9640276]; p1 = sigmoid(0.9640276) = 0.7239275;
  // v = [0, 1] -> 0.7239275 (without softcap it would be sigmoid(2) = 0.8807971)
  EXPECT_NEAR(attend_1d(1, 0, 2, 0, 1, 0, 0, {{"scale", Value(1.0)}, {"softcap", Value(1.0)}}), 0.7239275, 1e-6);
  EXPECT_NEAR(attend_1d(1, 0, 2, 0, 1, 0, 0, one), 0.8807971, 1e-6);
}

TEST(Attention, FullyMaskedRowIsAFiniteUniformAverage) {
  // Every slot hidden: scores are all -1e30 (+ tiny) and softmax is uniform -> mean of v = (4 + 8) / 2 = 6.
  const float out = attend_1d(3, 1, 2, 4, 8, kHidden, kHidden, {{"scale", Value(1.0)}});
  EXPECT_TRUE(std::isfinite(out));
  EXPECT_NEAR(out, 6.0, 1e-6);
}

TEST(Attention, GroupedQueryHeadsShareKvHeads) {
  // Hq = 4, Hkv = 2, S = 1, D = 2: with one slot, p = 1 and out = v of the head's kv head (h / 2).
  float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k[4] = {1, 1, 1, 1}, v[4] = {10, 11, 20, 21}, mask[1] = {0}, out[8];
  ASSERT_TRUE(run("attention", {{"scale", Value(0.125)}},
                  {TensorView(q, DType::kF32, {1, 1, 4, 2}), TensorView(k, DType::kF32, {1, 2, 1, 2}),
                   TensorView(v, DType::kF32, {1, 2, 1, 2}), TensorView(mask, DType::kF32, {1, 1, 1, 1})},
                  {TensorView(out, DType::kF32, {1, 1, 4, 2})})
                  .ok());
  const float want[8] = {10, 11, 10, 11, 20, 21, 20, 21};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

// Naive double attention on already-decoded caches ([Hkv, S, D]).
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<double>& k, const std::vector<double>& v,
                                    const std::vector<float>& mask, int64_t t_len, int64_t hq, int64_t hkv, int64_t s_len,
                                    int64_t d, double scale, double softcap) {
  std::vector<double> out(static_cast<size_t>(t_len * hq * d));
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / (hq / hkv);
      std::vector<double> sc(static_cast<size_t>(s_len));
      double mx = -INFINITY;
      for (int64_t j = 0; j < s_len; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += q[static_cast<size_t>((t * hq + h) * d + i)] * k[static_cast<size_t>((kvh * s_len + j) * d + i)];
        double sj = dot * scale;
        if (softcap > 0) sj = std::tanh(sj / softcap) * softcap;
        sj += mask[static_cast<size_t>(t * s_len + j)];
        sc[static_cast<size_t>(j)] = sj;
        mx = std::max(mx, sj);
      }
      double z = 0;
      for (double& e : sc) z += (e = std::exp(e - mx));
      for (int64_t i = 0; i < d; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < s_len; ++j)
          acc += sc[static_cast<size_t>(j)] / z * v[static_cast<size_t>((kvh * s_len + j) * d + i)];
        out[static_cast<size_t>((t * hq + h) * d + i)] = acc;
      }
    }
  return out;
}

void check_differential(DType cache_dtype, double softcap) {
  const int64_t t_len = 3, hq = 4, hkv = 2, s_len = 7, d = 16;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<float> q = optest::random_floats(static_cast<size_t>(t_len * hq * d), 71, -2.0f, 2.0f);
  const size_t cache_n = static_cast<size_t>(hkv * s_len * d);
  std::vector<float> k32 = optest::random_floats(cache_n, 72, -2.0f, 2.0f), v32 = optest::random_floats(cache_n, 73);
  std::vector<uint16_t> k16 = optest::random_f16_bits(cache_n, 74), v16 = optest::random_f16_bits(cache_n, 75);
  // int8: random q in [-127, 127] and positive row scales (one per kv head and slot); the naive side
  // dequantizes them up front (x = scale · q, in double), which the op must never do.
  std::vector<int8_t> k8(cache_n), v8(cache_n);
  for (size_t i = 0; i < cache_n; ++i) {
    k8[i] = static_cast<int8_t>(static_cast<int>(k16[i] % 255) - 127);
    v8[i] = static_cast<int8_t>(static_cast<int>(v16[i] % 255) - 127);
  }
  std::vector<float> ks = optest::random_floats(static_cast<size_t>(hkv * s_len), 76, 0.001f, 0.03f);
  std::vector<float> vs = optest::random_floats(static_cast<size_t>(hkv * s_len), 77, 0.001f, 0.03f);
  std::vector<double> k(cache_n), v(cache_n);
  for (size_t i = 0; i < cache_n; ++i) {
    k[i] = cache_dtype == DType::kF16 ? optest::f16_bits_to_double(k16[i]) : k32[i];
    v[i] = cache_dtype == DType::kF16 ? optest::f16_bits_to_double(v16[i]) : v32[i];
    if (cache_dtype == DType::kI8) {
      k[i] = static_cast<double>(ks[i / static_cast<size_t>(d)]) * k8[i];
      v[i] = static_cast<double>(vs[i / static_cast<size_t>(d)]) * v8[i];
    }
  }
  // Causal-style mask over the 7 slots: token t sees slots 0..4 + t; slot 2 is hidden for everyone.
  std::vector<float> mask(static_cast<size_t>(t_len * s_len), 0.0f);
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t j = 0; j < s_len; ++j)
      if (j > 4 + t || j == 2) mask[static_cast<size_t>(t * s_len + j)] = kHidden;
  const void* kp = cache_dtype == DType::kF16 ? static_cast<const void*>(k16.data()) : k32.data();
  const void* vp = cache_dtype == DType::kF16 ? static_cast<const void*>(v16.data()) : v32.data();
  if (cache_dtype == DType::kI8) kp = k8.data(), vp = v8.data();
  std::vector<float> out(q.size());
  Attrs attrs{{"scale", Value(scale)}};
  if (softcap > 0) attrs["softcap"] = Value(softcap);
  std::vector<TensorView> in{TensorView(q.data(), DType::kF32, {1, t_len, hq, d}), TensorView(kp, cache_dtype, {1, hkv, s_len, d}),
                             TensorView(vp, cache_dtype, {1, hkv, s_len, d}),
                             TensorView(mask.data(), DType::kF32, {1, 1, t_len, s_len})};
  if (cache_dtype == DType::kI8) {
    in.emplace_back(ks.data(), DType::kF32, Shape{1, hkv, s_len});
    in.emplace_back(vs.data(), DType::kF32, Shape{1, hkv, s_len});
  }
  ASSERT_TRUE(run("attention", attrs, in, {TensorView(out.data(), DType::kF32, {1, t_len, hq, d})}).ok());
  optest::expect_close(out, naive_attention(q, k, v, mask, t_len, hq, hkv, s_len, d, static_cast<float>(scale), softcap),
                       1e-5);
}

TEST(Attention, F32CacheMatchesNaiveDouble) { check_differential(DType::kF32, 0.0); }
TEST(Attention, F16CacheMatchesNaiveDouble) { check_differential(DType::kF16, 0.0); }
TEST(Attention, SoftcapMatchesNaiveDouble) { check_differential(DType::kF32, 2.0); }
TEST(Attention, Int8CacheWithRowScalesMatchesNaiveDouble) { check_differential(DType::kI8, 0.0); }
TEST(Attention, Int8CacheWithSoftcapMatchesNaiveDouble) { check_differential(DType::kI8, 2.0); }

TEST(Attention, Int8CacheRuleNeedsBothScales) {
  const TensorType q{DType::kF32, {1, 2, 4, 8}}, k{DType::kI8, {1, 2, 16, 8}}, mask{DType::kF32, {1, 1, 2, 16}};
  const TensorType sc{DType::kF32, {1, 2, 16}}, bad_sc{DType::kF32, {1, 2, 15}};
  const Attrs a{{"scale", Value(0.125)}};
  EXPECT_TRUE(infer("attention", {q, k, k, mask, sc, sc}, a).ok());
  auto no_scale = infer("attention", {q, k, k, mask}, a);
  ASSERT_FALSE(no_scale.ok());
  EXPECT_NE(no_scale.error().message().find("k_scale"), std::string::npos) << no_scale.error().to_string();
  EXPECT_FALSE(infer("attention", {q, k, k, mask, sc, bad_sc}, a).ok());
  const TensorType f{DType::kF32, {1, 2, 16, 8}};
  EXPECT_FALSE(infer("attention", {q, f, f, mask, sc, sc}, a).ok());  // only i8 caches take scales
}

TEST(Attention, Rule) {
  const TensorType q{DType::kF32, {1, 4, 8, 64}}, k{DType::kF16, {1, 2, 128, 64}}, mask{DType::kF32, {1, 1, 4, 128}};
  const Attrs a{{"scale", Value(0.125)}};
  auto r = infer("attention", {q, k, k, mask}, a);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], q);
  expect_error(infer("attention", {q, TensorType{DType::kF16, {1, 3, 128, 64}}, TensorType{DType::kF16, {1, 3, 128, 64}}, mask}, a),
               ErrorCode::kShapeMismatch, "operand 1 (k_cache): expected [1, Hkv, S, D] with Hkv dividing Hq = 8");
  expect_error(infer("attention", {q, TensorType{DType::kF16, {1, 2, 128, 32}}, k, mask}, a), ErrorCode::kShapeMismatch,
               "operand 1 (k_cache): expected [1, Hkv, S, D] with D = 64, got f16[1, 2, 128, 32]");
  expect_error(infer("attention", {q, k, TensorType{DType::kF32, {1, 2, 128, 64}}, mask}, a), ErrorCode::kDTypeMismatch,
               "operand 2 (v_cache): expected dtype f16, got f32[1, 2, 128, 64]");
  expect_error(infer("attention", {q, k, TensorType{DType::kF16, {1, 2, 64, 64}}, mask}, a), ErrorCode::kShapeMismatch,
               "operand 2 (v_cache): expected [1, Hkv, S, D] with Hkv = 2, S = 128, D = 64");
  expect_error(infer("attention", {q, k, k, TensorType{DType::kF32, {1, 1, 4, 127}}}, a), ErrorCode::kShapeMismatch,
               "operand 3 (mask): expected [1, 1, T, S] with T = 4, S = 128, got f32[1, 1, 4, 127]");
  expect_error(infer("attention", {q, k, k, TensorType{DType::kF16, {1, 1, 4, 128}}}, a), ErrorCode::kDTypeMismatch,
               "operand 3 (mask): expected dtype f32");
  expect_error(infer("attention", {TensorType{DType::kF32, {4, 8, 64}}, k, k, mask}, a), ErrorCode::kShapeMismatch,
               "operand 0 (q): expected [1, T, Hq, D]");
  expect_error(infer("attention", {q, TensorType{DType::kBF16, {1, 2, 128, 64}}, k, mask}, a), ErrorCode::kDTypeMismatch,
               "operand 1 (k_cache): expected dtype f32|f16|i8, got bf16");
  expect_error(infer("attention", {q, k, k}, a), ErrorCode::kInvalidArgument, "operand 3 (mask): required operand is absent");
  expect_error(infer("attention", {q, k, k, mask}), ErrorCode::kBadAttribute, "missing required attribute 'scale'");
  expect_error(infer("attention", {q, k, k, mask}, {{"scale", Value(0.125)}, {"softcap", Value(-1.0)}}),
               ErrorCode::kBadAttribute, "attribute 'softcap': expected a finite number >= 0");
  expect_error(infer("attention", {q, k, k, mask}, {{"scale", Value(0.125)}, {"causal", Value(true)}}),
               ErrorCode::kUnknownAttribute, "unknown attribute 'causal'");
}

}  // namespace
}  // namespace hfs
