#include "backends/cpu_fast/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace hfs::cpu_fast {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
}
#endif

#if defined(__x86_64__)
// AMX-TILE and AMX-INT8 (CPUID.(7,0):EDX bits 24, 25), the tile state enabled in XCR0 (bits 17, 18),
// and Linux's per-process permission for the 8 KiB tile data state, without which the first tile
// instruction raises SIGILL.
bool amx_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (d & (3u << 24)) != (3u << 24)) return false;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1u << 27)) == 0) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16")) {
#if defined(__x86_64__)
    if (amx_usable()) return Isa::kAmx;
#endif
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
    return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

Isa env_cap() {
  const char* s = std::getenv("HFS_CPU_FAST_ISA");
  if (s == nullptr) return Isa::kAmx;
  std::string_view v(s);
  if (v == "scalar") return Isa::kScalar;
  if (v == "avx2") return Isa::kAvx2;
  if (v == "avx512") return Isa::kAvx512;
  return Isa::kAmx;
}

std::atomic<int> g_cap{-1};

}  // namespace

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa active_isa() {
  int cap = g_cap.load(std::memory_order_relaxed);
  if (cap < 0) {
    cap = static_cast<int>(env_cap());
    g_cap.store(cap, std::memory_order_relaxed);
  }
  int det = static_cast<int>(detected_isa());
  return static_cast<Isa>(cap < det ? cap : det);
}

void set_isa_cap(Isa cap) { g_cap.store(static_cast<int>(cap), std::memory_order_relaxed); }

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAmx: return "amx";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "scalar";
  }
}

}  // namespace hfs::cpu_fast
