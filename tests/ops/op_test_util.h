// Helpers for op tests: calling a rule or a reference kernel by op name, random data, and an
// independent decoder of f16/bf16 bits (so references never reuse src/core/half.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hfstatic/ext/ops.h"
#include "support/random_floats.h"

namespace hfs::optest {

// Runs the shape/dtype rule of `op`; std::nullopt marks an absent optional operand.
inline Result<std::vector<TensorType>> infer(std::string_view op, const std::vector<std::optional<TensorType>>& in,
                                             const Attrs& attrs = {}) {
  const OpSchema* s = find_op(op);
  if (!s) return make_error(ErrorCode::kUnknownOp, std::string(op));
  std::vector<const TensorType*> ptrs;
  for (const auto& t : in) ptrs.push_back(t ? &*t : nullptr);
  return s->infer(ptrs, attrs);
}

// Runs the reference kernel of `op` through hfs::run_reference.
inline Status run(std::string_view op, const Attrs& attrs, const std::vector<TensorView>& in,
                  const std::vector<TensorView>& out) {
  NodeDef node{std::string(op), {}, {}, attrs};
  return run_reference(node, in, out);
}

// Asserts a failed rule/kernel with `code` whose message contains `needle`.
template <typename R>
void expect_error(const R& r, ErrorCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected error containing: " << needle;
  EXPECT_EQ(r.error().code(), code) << r.error().to_string();
  EXPECT_NE(r.error().message().find(needle), std::string::npos)
      << "message: " << r.error().message() << "\nexpected to contain: " << needle;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  hfs::test::Uniform<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Independent f16 decode in double: (-1)^s * (e == 0 ? m * 2^-24 : (1 + m / 1024) * 2^(e - 15)).
inline double f16_bits_to_double(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double mag;
  if (e == 31) mag = m ? NAN : INFINITY;
  else if (e == 0) mag = std::ldexp(static_cast<double>(m), -24);
  else mag = std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -mag : mag;
}

// bf16 is the top half of an f32.
inline double bf16_bits_to_double(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Random finite f16 bit patterns with magnitude roughly in [2^-4, 2) (exponents 11..15) and random sign.
inline std::vector<uint16_t> random_f16_bits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (uint16_t& b : v) {
    const uint32_t e = 11 + rng() % 5, m = rng() % 1024, s = rng() % 2;
    b = static_cast<uint16_t>((s << 15) | (e << 10) | m);
  }
  return v;
}

// bf16 bit patterns: the top 16 bits (truncation) of random floats in [-1, 1).
inline std::vector<uint16_t> random_bf16_bits(size_t n, uint32_t seed) {
  std::vector<float> f = random_floats(n, seed);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &f[i], 4);
    v[i] = static_cast<uint16_t>(u >> 16);
  }
  return v;
}

// |got - want| <= tol * (1 + scale) element-wise, where scale defaults to |want|.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                         const std::vector<double>* scale = nullptr) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double s = scale ? (*scale)[i] : std::abs(want[i]);
    ASSERT_TRUE(std::isfinite(got[i])) << "at " << i;
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + s)) << "at " << i;
  }
}

}  // namespace hfs::optest
