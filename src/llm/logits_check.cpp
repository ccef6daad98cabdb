#include "llm/logits_check.h"

#include <cstddef>

#include "core/vector_clones.h"

namespace hfs::detail {

// Per-lane flags, never a reduction until the end: the same answer at every vector width.
HFS_VECTOR_CLONES void scan_logits(std::span<const float> logits, bool& any_bad, bool& all_masked) {
  constexpr size_t kLanes = 16;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  unsigned bad[kLanes] = {}, masked[kLanes];
  for (unsigned& m : masked) m = 1;
  const float* x = logits.data();
  const size_t n = logits.size(), full = n - n % kLanes;
  for (size_t i = 0; i < full; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      bad[j] |= !(x[i + j] < kInf);  // NaN or +inf: both fail x < inf
      masked[j] &= x[i + j] == -kInf;
    }
  unsigned any = 0, all = 1;
  for (size_t j = 0; j < kLanes; ++j) any |= bad[j], all &= masked[j];
  for (size_t i = full; i < n; ++i) any |= !(x[i] < kInf), all &= x[i] == -kInf;
  any_bad = any != 0;
  all_masked = all != 0;
}

}  // namespace hfs::detail
