#include "backends/cpu_fast/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu_fast/attention_kernels.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"

namespace hfs::cpu_fast {

AttentionScratch::AttentionScratch(int threads_, int64_t group, int64_t s)
    : scores(static_cast<size_t>(threads_ * group * s)), per_thread(group * s), threads(threads_) {}

int64_t live_slots(const float* mask, int64_t t, int64_t s, int32_t* slots) {
  return active_isa() == Isa::kAvx512 ? detail::live_slots_avx512(mask, t, s, slots)
                                      : detail::live_slots_scalar(mask, t, s, slots);
}

void attention(const AttentionArgs& a, const int32_t* live, int64_t n_live, AttentionScratch& scratch, ThreadPool* pool) {
  const Isa isa = active_isa();
  const detail::ScoresFn scores = isa == Isa::kAvx512 ? detail::attn_scores_avx512
                                  : isa == Isa::kAvx2 ? detail::attn_scores_avx2
                                                      : detail::attn_scores_scalar;
  const detail::AccumFn accum = isa == Isa::kAvx512 ? detail::attn_accum_avx512
                                : isa == Isa::kAvx2 ? detail::attn_accum_avx2
                                                    : detail::attn_accum_scalar;
  const int g = static_cast<int>(a.hq / a.hkv);
  const bool f16 = a.kv_dtype == DType::kF16;
  const int64_t es = f16 ? 2 : 4, d = a.d, S = a.s;
  auto body = [&](int64_t task, int thread) {
    const int64_t h = task % a.hkv, r = task / a.hkv;
    const float* q = a.q + (r * a.hq + h * g) * d;
    float* out = a.out + (r * a.hq + h * g) * d;
    const void* kb = static_cast<const char*>(a.k) + h * S * d * es;
    const void* vb = static_cast<const char*>(a.v) + h * S * d * es;
    const float* mrow = a.mask + r * S;
    float* sc = scratch.scores.data() + thread * scratch.per_thread;
    std::memset(out, 0, static_cast<size_t>(g * d) * sizeof(float));
    bool visible = false;
    for (int64_t i = 0; i < n_live && !visible; ++i) visible = mrow[live[i]] > kHiddenThreshold;
    if (!visible) {
      // Every score is -1e30 + O(1), which rounds to the same float: the reference softmax is uniform.
      for (int64_t s = 0; s < S; ++s)
        for (int64_t e = 0; e < d; ++e) {
          const float vv = f16 ? f16_to_f32(static_cast<const uint16_t*>(vb)[s * d + e])
                               : static_cast<const float*>(vb)[s * d + e];
          for (int j = 0; j < g; ++j) out[j * d + e] += vv;
        }
      for (int64_t e = 0; e < g * d; ++e) out[e] /= static_cast<float>(S);
      return;
    }
    scores(q, g, kb, f16, d, live, n_live, sc);
    for (int j = 0; j < g; ++j) {
      float* sj = sc + j * n_live;
      float mx = -INFINITY;
      for (int64_t i = 0; i < n_live; ++i) {
        float v = sj[i] * a.scale;
        if (a.softcap > 0) v = std::tanh(v / a.softcap) * a.softcap;
        v += mrow[live[i]];
        sj[i] = v;
        mx = std::max(mx, v);
      }
      float sum = 0;
      for (int64_t i = 0; i < n_live; ++i) {
        sj[i] = std::exp(sj[i] - mx);
        sum += sj[i];
      }
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < n_live; ++i) sj[i] *= inv;
    }
    accum(sc, g, vb, f16, d, live, n_live, out);
  };
  const int64_t tasks = a.hkv * a.t;
  if (pool != nullptr && tasks > 1)
    pool->run(tasks, body);
  else
    for (int64_t task = 0; task < tasks; ++task) body(task, 0);
}

}  // namespace hfs::cpu_fast
