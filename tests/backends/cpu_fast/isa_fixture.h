// Runs a cpu_fast test once per dispatch path (scalar, AVX2, AVX-512): SetUp caps the ISA the kernels
// pick, TearDown lifts the cap, and a path the CPU lacks is skipped (not passed). kAmx is AVX-512 with
// the AMX integer prefill kernel.
//
//   class CpuFastThing : public IsaTest {};
//   TEST_P(CpuFastThing, MatchesReference) { ... }
//   INSTANTIATE_TEST_SUITE_P(Isa, CpuFastThing, all_isas(), isa_test_name);
//   // → Isa/CpuFastThing.MatchesReference/scalar, .../avx2, .../avx512, .../amx
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "backends/cpu_fast/cpu_features.h"

namespace hfs::cpu_fast {

class IsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(detected_isa())) GTEST_SKIP() << "CPU lacks this ISA";
    set_isa_cap(GetParam());
  }
  void TearDown() override { set_isa_cap(Isa::kAmx); }
};

inline auto all_isas() { return ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx); }
inline std::string isa_test_name(const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); }

}  // namespace hfs::cpu_fast
