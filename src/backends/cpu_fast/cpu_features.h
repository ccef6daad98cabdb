// cpu_fast/cpu_features.h — which instruction-set path the fast CPU kernels take (runtime dispatch).
//
// Kernels are compiled three times (AVX-512 with VNNI+BF16, AVX2+FMA+F16C, portable scalar) with
// per-function target attributes, never -march=native, so one binary runs on any x86-64 CPU and picks
// the best path at start-up; CPUs with AMX-INT8 tiles (Sapphire Rapids and later) add a fourth level,
// AVX-512 everywhere plus AMX for the integer prefill GEMMs. HFS_CPU_FAST_ISA=scalar|avx2|avx512|amx
// caps the choice (tests use it to run every path on a machine that has them all).
//
//   hfs::cpu_fast::Isa isa = hfs::cpu_fast::active_isa();   // kAvx512 on a Zen 4, kAmx on a Xeon 4th gen+
#pragma once

#include <string_view>

// The x86 kernels (the *_avx2, *_avx512 and *_amx files) are compiled only for x86-64; elsewhere those
// files are empty and detect() never goes above kScalar, so only the portable scalar path runs. Their
// declarations carry HFS_X86_KERNEL: weak outside x86-64, so the dispatch code that names them (and never
// calls them there) still links.
#if defined(__x86_64__)
#define HFS_X86_KERNEL
#else
#define HFS_X86_KERNEL __attribute__((weak))
#endif

namespace hfs::cpu_fast {

// Ordered: each level includes the kernels of the ones below it (kAmx runs every AVX-512 kernel).
enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

// Best path this CPU supports (cpuid via __builtin_cpu_supports), ignoring the environment cap. kAmx
// also needs the OS to enable the tile state (XCR0) and, on Linux, grant it to this process
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once here); if it refuses, the answer is kAvx512.
Isa detected_isa();
// detected_isa() capped by HFS_CPU_FAST_ISA, or by set_isa_cap().
Isa active_isa();
// Caps the path for the rest of the process (tests). Values above detected_isa() are clamped.
void set_isa_cap(Isa cap);
std::string_view isa_name(Isa isa);

}  // namespace hfs::cpu_fast
