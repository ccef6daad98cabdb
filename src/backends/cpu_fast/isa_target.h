// cpu_fast/isa_target.h — compiles the rest of a kernel file for one dispatch level (internal).
//
// The AVX2, AVX-512 and AMX kernels are built into the same baseline x86-64 library as everything else,
// and cpu_features.cpp calls them only on CPUs that have the level, so each kernel file switches its
// target after its headers:
//
//   #include <immintrin.h>                              // every shared header first
//   #include "backends/cpu_fast/linear_kernels.h"
//
//   HFS_TARGET_AVX2_BEGIN
//   #include "backends/cpu_fast/vec_exp_avx2.h"         // headers written for this level after it
//   ...kernels...
//   HFS_TARGET_END
//
// The switch is a pragma in the file, not a per-file -mavx512f: a command-line flag would also compile
// every inline function the file takes from a shared header (std::min, AlignedArray::data,
// PanelPrefetch) for AVX-512, and where the compiler keeps an out-of-line copy of one (GCC at -O0,
// clang -O1 with sanitizers) the linker may pick that copy for the whole library — an AVX-512
// instruction in code that runs on every CPU. Under the pragma only the functions defined after it are
// compiled for the level.
//
// The target strings are the features cpu_features.cpp requires for the level (detected_isa).
#pragma once

#define HFS_TARGET_PRAGMA_(x) _Pragma(#x)

#define HFS_TARGET_AVX2_FEATURES_ "avx2,fma,f16c"
#define HFS_TARGET_AVX512_FEATURES_ "avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c"
#define HFS_TARGET_AMX_FEATURES_ "avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c,amx-tile,amx-int8"

#if defined(__clang__)
#define HFS_TARGET_BEGIN_(features) \
  HFS_TARGET_PRAGMA_(clang attribute push(__attribute__((target(features))), apply_to = function))
#define HFS_TARGET_QUIET_BEGIN_(features) HFS_TARGET_BEGIN_(features)
#define HFS_TARGET_END HFS_TARGET_PRAGMA_(clang attribute pop)
#else
#define HFS_TARGET_BEGIN_(features) \
  HFS_TARGET_PRAGMA_(GCC push_options) HFS_TARGET_PRAGMA_(GCC diagnostic push) HFS_TARGET_PRAGMA_(GCC target(features))
// GCC 12 flags the deliberately undefined lanes of _mm512_undefined_* inside its own AVX-512 headers.
#define HFS_TARGET_QUIET_BEGIN_(features)                       \
  HFS_TARGET_PRAGMA_(GCC push_options)                          \
  HFS_TARGET_PRAGMA_(GCC diagnostic push)                       \
  HFS_TARGET_PRAGMA_(GCC diagnostic ignored "-Wuninitialized")  \
  HFS_TARGET_PRAGMA_(GCC diagnostic ignored "-Wmaybe-uninitialized") HFS_TARGET_PRAGMA_(GCC target(features))
#define HFS_TARGET_END HFS_TARGET_PRAGMA_(GCC diagnostic pop) HFS_TARGET_PRAGMA_(GCC pop_options)
#endif

#define HFS_TARGET_AVX2_BEGIN HFS_TARGET_BEGIN_(HFS_TARGET_AVX2_FEATURES_)
#define HFS_TARGET_AVX512_BEGIN HFS_TARGET_QUIET_BEGIN_(HFS_TARGET_AVX512_FEATURES_)
#define HFS_TARGET_AMX_BEGIN HFS_TARGET_QUIET_BEGIN_(HFS_TARGET_AMX_FEATURES_)
