// cpu_fast elementwise kernels against double-precision definitions, on every ISA path the CPU has.
#include "backends/cpu_fast/elementwise.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "core/half.h"
#include "isa_fixture.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

class CpuFastElementwise : public IsaTest {};

// silu(g)·u = g / (1 + e^-g) · u over the whole float range that matters (|g| up to 120, where e^-g
// overflows or underflows), including lengths that leave a partial vector.
TEST_P(CpuFastElementwise, SiluMulMatchesDoubleDefinition) {
  std::mt19937 rng(3);
  hfs::test::Uniform<float> wide(-120.0f, 120.0f), narrow(-6.0f, 6.0f);
  for (int64_t n : {1, 15, 16, 17, 1000, 4867}) {
    std::vector<float> g(static_cast<size_t>(n)), u(g.size()), y(g.size(), 123.0f);
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = i % 3 == 0 ? wide(rng) : narrow(rng);
      u[i] = narrow(rng);
    }
    silu_mul(g.data(), u.data(), n, y.data());
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * u[i];
      ASSERT_NEAR(y[i], want, 2e-6 * (std::fabs(want) + 1e-30) + 1e-37)
          << "n=" << n << " i=" << i << " g=" << g[i] << " isa=" << isa_name(active_isa());
    }
  }
}

// y = x / sqrt(mean(x²) + eps) · w (or · (1 + w)), per row, for widths around the vector length.
TEST_P(CpuFastElementwise, RmsNormMatchesDoubleDefinition) {
  std::mt19937 rng(5);
  hfs::test::Normal<float> d(0.0f, 2.0f);
  for (int64_t width : {1, 15, 16, 17, 576, 897}) {
    for (bool unit_offset : {false, true}) {
      const int64_t rows = 3;
      std::vector<float> x(static_cast<size_t>(rows * width)), w(static_cast<size_t>(width)), y(x.size(), 9.0f);
      for (auto& v : x) v = d(rng);
      for (auto& v : w) v = d(rng);
      rms_norm(x.data(), w.data(), rows, width, 1e-6f, unit_offset, y.data());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < width; ++i) ss += double(x[r * width + i]) * x[r * width + i];
        const double inv = 1.0 / std::sqrt(ss / double(width) + 1e-6);
        for (int64_t i = 0; i < width; ++i) {
          const double want = x[r * width + i] * inv * (unit_offset ? 1.0 + w[i] : double(w[i]));
          ASSERT_NEAR(y[r * width + i], want, 1e-6 * (std::fabs(want) + 1e-3))
              << "width=" << width << " row=" << r << " i=" << i << " isa=" << isa_name(active_isa());
        }
      }
    }
  }
}

// HF rotate_half RoPE with the angle pos·inv_freq formed in f32 (as HF does), partial rotary
// (r < d copies the rest) and in place.
TEST_P(CpuFastElementwise, RopeMatchesDoubleDefinition) {
  std::mt19937 rng(9);
  hfs::test::Normal<float> d(0.0f, 1.0f);
  const int64_t T = 3, H = 2;
  const std::vector<int32_t> pos = {0, 17, 4095};
  for (auto [D, r] : {std::pair<int64_t, int64_t>{64, 64}, {64, 32}, {80, 40}, {6, 6}}) {
    std::vector<float> inv(static_cast<size_t>(r / 2));
    for (int64_t i = 0; i < r / 2; ++i) inv[static_cast<size_t>(i)] = static_cast<float>(std::pow(10000.0, -2.0 * i / r));
    std::vector<float> x(static_cast<size_t>(T * H * D)), y(x.size(), 5.0f), cs(static_cast<size_t>(T * r));
    for (auto& v : x) v = d(rng);
    rope_angles(pos.data(), inv.data(), T, r, 0.5f, cs.data());
    rope_apply(x.data(), cs.data(), T, H, D, r, y.data());
    std::vector<float> inplace = x;
    rope_apply(inplace.data(), cs.data(), T, H, D, r, inplace.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < D; ++i) {
          const float* xr = x.data() + (t * H + h) * D;
          double want = xr[i];
          if (i < r) {
            const int64_t f = i % (r / 2);
            const double ang = double(static_cast<float>(pos[static_cast<size_t>(t)]) * inv[static_cast<size_t>(f)]);
            const double c = std::cos(ang) * 0.5, sn = std::sin(ang) * 0.5;
            want = i < r / 2 ? xr[i] * c - xr[i + r / 2] * sn : xr[i] * c + xr[i - r / 2] * sn;
          }
          const size_t at = static_cast<size_t>((t * H + h) * D + i);
          ASSERT_NEAR(y[at], want, 2e-6) << "D=" << D << " r=" << r << " t=" << t << " i=" << i;
          ASSERT_EQ(inplace[at], y[at]) << "in place differs at " << at;
        }
  }
}

// The vector f32 → f16 conversion is bit-identical to the portable one (round to nearest even, ties,
// overflow to inf, f16 subnormals, NaN → canonical quiet NaN with its sign) on random bit patterns.
TEST_P(CpuFastElementwise, F32ToF16RowIsBitIdenticalToPortable) {
  std::mt19937 rng(11);
  std::vector<float> src;
  for (float v : {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, -65519.0f, 5.9604645e-8f, 2.9802322e-8f, 1e-10f,
                  std::bit_cast<float>(0x7F800000u), std::bit_cast<float>(0xFF800001u), std::bit_cast<float>(0x7FC12345u),
                  1.00048828125f /* tie: 1 + 2^-11 */})
    src.push_back(v);
  for (int i = 0; i < 4000; ++i) {
    const uint32_t bits = rng();
    // Bias the exponent toward the f16 range so ties, subnormals and overflow are all well represented.
    src.push_back(i % 2 ? std::bit_cast<float>(bits) : std::bit_cast<float>((bits & 0x87FFFFFFu) | 0x30000000u));
  }
  for (size_t n : {size_t{1}, size_t{17}, src.size()}) {
    std::vector<uint16_t> got(n, 0xABCD);
    f32_to_f16_row(src.data(), got.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], f32_to_f16(src[i])) << "i=" << i << " bits=0x" << std::hex << std::bit_cast<uint32_t>(src[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastElementwise, all_isas(), isa_test_name);

}  // namespace
}  // namespace hfs::cpu_fast
