// hfstatic/ext/backend_kernels.h — which kernels a backend runs on this machine, for reports.
//
// Results are bit-identical run to run within one kernel level of a backend, and may differ between
// levels (docs/determinism.md), so `hfstatic inspect`, `hfstatic bench` and a server's properties say
// which one ran. A backend registers a describer from its own file, as it registers its factory:
//
//   const bool kKernels = hfs::register_backend_kernels("cpu_fast", [] { return std::string("avx512"); });
//   std::string k = hfs::backend_kernels("cpu_fast");   // "avx512" (the CPU's dispatch level); "" if none
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "hfstatic/export_macro.h"

namespace hfs {

using KernelsDescriber = std::function<std::string()>;
// The first registration of a name wins (returns false for a later one).
HFS_API bool register_backend_kernels(std::string name, KernelsDescriber describe);
// What the backend's describer says now (cpu_fast: its dispatch level, which HFS_CPU_FAST_ISA caps);
// "" for a backend with none.
HFS_API std::string backend_kernels(std::string_view name);

}  // namespace hfs
