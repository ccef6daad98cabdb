// cpu_fast/cpu_features.h — which instruction-set path the fast CPU kernels take (runtime dispatch).
//
// Kernels are compiled three times (AVX-512 with VNNI+BF16, AVX2+FMA+F16C, portable scalar) with
// per-function target attributes, never -march=native, so one binary runs on any x86-64 CPU and picks
// the best path at start-up. HFS_CPU_FAST_ISA=scalar|avx2|avx512 caps the choice (tests use it to run
// every path on a machine that has them all).
//
//   hfs::cpu_fast::Isa isa = hfs::cpu_fast::active_isa();   // kAvx512 on a Zen 4
#pragma once

#include <string_view>

namespace hfs::cpu_fast {

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// Best path this CPU supports (cpuid via __builtin_cpu_supports), ignoring the environment cap.
Isa detected_isa();
// detected_isa() capped by HFS_CPU_FAST_ISA, or by set_isa_cap().
Isa active_isa();
// Caps the path for the rest of the process (tests). Values above detected_isa() are clamped.
void set_isa_cap(Isa cap);
std::string_view isa_name(Isa isa);

}  // namespace hfs::cpu_fast
