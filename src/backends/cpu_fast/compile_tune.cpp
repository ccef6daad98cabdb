// Tune: the decode GEMV variant of each 16-bit weight class (compile_steps.h, linear_half.h). By default
// every weight keeps the ISA's kernel: variants add in different orders, so a variant picked by timing
// would make the same program give different bits from one load to the next (docs/determinism.md).
// HFS_CPU_FAST_HALF_GEMV=<name> forces one; HFS_CPU_FAST_HALF_GEMV=tune times them at load (faster on
// some machines, and not reproducible).
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "backends/cpu_fast/compile_steps.h"
#include "backends/cpu_fast/linear_half.h"
#include "backends/cpu_fast/step_profile.h"

namespace hfs::cpu_fast {
namespace {

// Below this many bytes of a class's weights the tuning would time the caches, not the memory a decode
// step streams from (a model's weights are far beyond the last-level cache; a test model's are not):
// such a class keeps the ISA's kernel.
constexpr size_t kMinTuneBytes = size_t{64} << 20;

bool is_half(DType d) { return d == DType::kF16 || d == DType::kBF16; }

}  // namespace

Status tune_linears(FastDelegate& d) {
  HFS_TRY(check_half_gemv_env());
  // The (format, K) classes that decode (one activation row) runs on constant 16-bit weights.
  std::map<std::pair<DType, int64_t>, std::vector<PackedWeight*>> classes;
  for (const Step& s : d.steps) {
    if (s.op != Op::kLinear || s.weight < 0 || d.weight_runtime_value[static_cast<size_t>(s.weight)] >= 0) continue;
    PackedWeight& w = *d.weights[static_cast<size_t>(s.weight)];
    if (!is_half(w.format) || d.vals[static_cast<size_t>(s.in[0])].type.shape.numel() != w.k) continue;
    classes[{w.format, w.k}];
  }
  for (auto& [key, members] : classes) {
    // Every constant weight of the class streams in the tuning (the prefill's too: the same bytes).
    size_t bytes = 0;
    for (size_t i = 0; i < d.weights.size(); ++i) {
      PackedWeight& w = *d.weights[i];
      if (d.weight_runtime_value[i] >= 0 || w.format != key.first || w.k != key.second) continue;
      if (std::find(members.begin(), members.end(), &w) != members.end()) continue;
      members.push_back(&w);
      bytes += w.weight_bytes();
    }
    HFS_ASSIGN_OR_RETURN(int variant, forced_half_gemv(key.first));
    if (variant < 0 && half_gemv_tuning_requested() && bytes >= kMinTuneBytes) {
      const std::vector<const PackedWeight*> ws(members.begin(), members.end());
      const HalfGemvTuning t = tune_half_gemv(key.first, key.second, ws, d.pool.get());
      if (StepProfile::requested()) std::fprintf(stderr, "%s\n", describe(t, key.first, key.second, d.pool->size()).c_str());
      variant = t.variant;
    }
    // Weights are shared by every delegate of the program (and every Runner over it), which may be running
    // while this one compiles: only a change is written, and a later tuning of the same class on the same
    // threads is the cached answer, so it writes nothing.
    for (PackedWeight* w : members)
      if (w->gemv_variant != variant) w->gemv_variant = variant;
  }
  return Ok{};
}

}  // namespace hfs::cpu_fast
