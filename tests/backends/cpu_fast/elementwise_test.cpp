// cpu_fast elementwise kernels against double-precision definitions, on every ISA path the CPU has.
#include "backends/cpu_fast/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"

namespace hfs::cpu_fast {
namespace {

class CpuFastElementwise : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(detected_isa())) GTEST_SKIP() << "CPU lacks this ISA";
    set_isa_cap(GetParam());
  }
  void TearDown() override { set_isa_cap(Isa::kAvx512); }
};

// silu(g)·u = g / (1 + e^-g) · u over the whole float range that matters (|g| up to 120, where e^-g
// overflows or underflows), including lengths that leave a partial vector.
TEST_P(CpuFastElementwise, SiluMulMatchesDoubleDefinition) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-120.0f, 120.0f), narrow(-6.0f, 6.0f);
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

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastElementwise, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace hfs::cpu_fast
