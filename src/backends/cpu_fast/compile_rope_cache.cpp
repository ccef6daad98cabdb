// RoPE / cache-write groups (compile_steps.h): a layer's q and k rotations and its k and v cache writes
// each touch a chunk's rows once; as separate steps each is too small to split over the pool, as one
// group it runs as one job, every task taking the group through its own rows
// (FastDelegate::run_rope_kv_group).
#include <algorithm>
#include <vector>

#include "backends/cpu_fast/compile_steps.h"

namespace hfs::cpu_fast {

// Runs of RoPE / K/V-cache-write steps (only reshapes between them) over the same rows: the last one runs
// them all. Members read values made before the run or by earlier members, so running them at the last
// member's place reads nothing that is not ready yet.
void group_rope_kv_writes(FastDelegate& d) {
  for (size_t i = 0; i < d.steps.size();) {
    std::vector<int> run;
    const int64_t T = rope_kv_rows(d.steps[i], d.vals);
    size_t j = i;
    for (; j < d.steps.size() && T > 0; ++j) {
      const Step& s = d.steps[j];
      if (s.op == Op::kReshape && s.run_by < 0) continue;
      if (s.run_by >= 0 || rope_kv_rows(s, d.vals) != T) break;
      run.push_back(static_cast<int>(j));
    }
    if (run.size() >= 2) {
      Step& last = d.steps[static_cast<size_t>(run.back())];
      last.group = run;
      for (size_t k = 0; k + 1 < run.size(); ++k) d.steps[static_cast<size_t>(run[k])].run_by = run.back();
    }
    i = std::max(j, i + 1);
  }
}

}  // namespace hfs::cpu_fast
