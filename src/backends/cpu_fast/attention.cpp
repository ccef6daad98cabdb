#include "backends/cpu_fast/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backends/cpu_fast/attention_kernels.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"

namespace hfs::cpu_fast {
namespace {

// (row, head) lanes per prefill block: two vectors' worth (attn_block_avx512 takes up to 32).
constexpr int kBlockLanes = 32;

// Split decode tasks AttentionScratch holds partials for, per thread (at least: it holds a whole row's
// segments too).
// Per-thread floats for a multi-row step's rows together (rows_together): 512 KiB, which holds 16 rows of
// Qwen2.5's 7 query heads over about 1000 slots; steps over more take the per-row units.
constexpr int64_t kRowsTogetherFloats = int64_t{128} << 10;
constexpr int64_t kMaxSplitTasksPerThread = 6;
int64_t max_split_tasks(int threads) { return kMaxSplitTasksPerThread * threads; }
// Split partials are held for rows of up to this many kv heads over all their segments (more take whole
// units: the same bits, on fewer threads).
constexpr int64_t kSplitKvHeads = 8;
// Per thread and query head: a segment's scores need S floats (S ≤ kSegmentSlots) or kSegmentSlots, and
// a row of several segments its later segments' sums (d floats; 512 where the head dims differ, d = 0).
int64_t scores_slots(int64_t s, int64_t d) { return s <= kSegmentSlots ? s : std::max(s, kSegmentSlots + (d > 0 ? d : 512)); }

struct Kernels {
  detail::ScoresFn scores;
  detail::AccumFn accum;
  detail::SoftmaxFn softmax;
  detail::ScoresI8Fn scores_i8;
  detail::AccumI8Fn accum_i8;
};

Kernels kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return {detail::attn_scores_avx512, detail::attn_accum_avx512, detail::attn_softmax_avx512,
              detail::attn_scores_i8_avx512, detail::attn_accum_i8_avx512};
    case Isa::kAvx2:
      return {detail::attn_scores_avx2, detail::attn_accum_avx2, detail::attn_softmax_avx2, detail::attn_scores_i8_avx2,
              detail::attn_accum_i8_avx2};
    default:
      return {detail::attn_scores_scalar, detail::attn_accum_scalar, detail::attn_softmax_scalar,
              detail::attn_scores_i8_scalar, detail::attn_accum_i8_scalar};
  }
}

// Bytes of one cache element (f32, f16 or i8).
int64_t elem_bytes(DType t) { return t == DType::kF16 ? 2 : t == DType::kI8 ? 1 : 4; }

bool row_sees_a_slot(const float* mrow, const int32_t* live, int64_t n_live) {
  for (int64_t i = 0; i < n_live; ++i)
    if (mrow[live[i]] > kHiddenThreshold) return true;
  return false;
}

// The slots each row walks: the union (a row skips what its mask hides) or, on the per-row path, its own.
struct RowLists {
  const int32_t* slots = nullptr;  // the union
  int64_t n = 0;
  const int32_t* row_slots = nullptr;  // per row (null: every row walks the union)
  const int64_t* row_n = nullptr;
  int64_t stride = 0;
  const int32_t* of(int64_t r) const { return row_slots != nullptr ? row_slots + r * stride : slots; }
  int64_t count(int64_t r) const { return row_slots != nullptr ? row_n[r] : n; }
  int64_t max_count(int64_t t) const { return row_slots != nullptr ? *std::max_element(row_n, row_n + t) : n; }
  // A row's own list holds only slots it sees; the union has to be checked against its mask.
  bool sees_a_slot(int64_t r, const float* mrow) const {
    return row_slots != nullptr ? row_n[r] > 0 : row_sees_a_slot(mrow, slots, n);
  }
};

// Every score is -1e30 + O(1), which rounds to the same float: the reference softmax is uniform.
// vs: an i8 cache's V scales of this kv head ([S]; null otherwise).
void uniform_average(const AttentionArgs& a, const void* vb, int g, float* out, const float* vs = nullptr) {
  const bool f16 = a.kv_dtype == DType::kF16;
  const int64_t d = a.d;
  std::memset(out, 0, static_cast<size_t>(g * d) * sizeof(float));
  for (int64_t s = 0; s < a.s; ++s)
    for (int64_t e = 0; e < d; ++e) {
      const float vv = vs != nullptr ? vs[s] * static_cast<float>(static_cast<const int8_t*>(vb)[s * d + e])
                       : f16         ? f16_to_f32(static_cast<const uint16_t*>(vb)[s * d + e])
                                     : static_cast<const float*>(vb)[s * d + e];
      for (int j = 0; j < g; ++j) out[j * d + e] += vv;
    }
  for (int64_t e = 0; e < g * d; ++e) out[e] /= static_cast<float>(a.s);
}

// One (row, head)'s scores sj[0, n) (raw q·k) → exp(s - max) in place, with the row's mask; returns
// Σ exp and sets *mx to the max, or returns 0 with *mx = -inf (and sj zeroed) when the row sees none of
// these slots.
float softmax_row(const AttentionArgs& a, const Kernels& kn, float* sj, int64_t n, const float* mrow, const int32_t* live,
                  float* mx) {
  float m = -INFINITY, total = 0;
  if (a.softcap > 0) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::tanh(sj[i] * a.scale / a.softcap) * a.softcap + mrow[live[i]];
      sj[i] = v;
      m = std::max(m, v);
    }
    if (m > kHiddenThreshold)
      for (int64_t i = 0; i < n; ++i) total += (sj[i] = std::exp(sj[i] - m));
  } else {
    total = kn.softmax(sj, n, mrow, live, a.scale, &m);
  }
  if (m <= kHiddenThreshold) {  // nothing in this range is visible to the row: contributes nothing
    std::memset(sj, 0, static_cast<size_t>(n) * sizeof(float));
    *mx = -INFINITY;
    return 0;
  }
  *mx = m;
  return total;
}

// Unnormalized attention of `g` query heads over live slots [i0, i1): acc_j = Σ exp(s - max_j) v,
// mx[j] = max_j (-inf when this range holds no slot visible to the row), sum[j] = Σ exp(s - max_j).
// ks, vs: an i8 cache's K and V scales of this kv head ([S]; null for f32/f16 caches): a slot's integer
// scores are scaled by its K scale before the softmax, its probabilities by its V scale before the sums.
void partial_attention(const AttentionArgs& a, const Kernels& kn, const float* q, const void* kb, const void* vb,
                       const float* mrow, const int32_t* live, int64_t n, int g, float* sc, float* acc, float* mx,
                       float* sum, const float* ks = nullptr, const float* vs = nullptr) {
  const bool f16 = a.kv_dtype == DType::kF16;
  std::memset(acc, 0, static_cast<size_t>(g * a.d) * sizeof(float));
  if (n == 0) {  // a split range of a row with fewer slots than the step's longest
    std::fill(mx, mx + g, -INFINITY);
    std::fill(sum, sum + g, 0.0f);
    return;
  }
  if (ks != nullptr) {
    kn.scores_i8(q, g, static_cast<const int8_t*>(kb), ks, a.d, live, n, sc);
  } else {
    kn.scores(q, g, kb, vb, f16, a.d, live, n, sc);
  }
  bool any = false;
  for (int j = 0; j < g; ++j) {
    sum[j] = softmax_row(a, kn, sc + j * n, n, mrow, live, &mx[j]);
    any = any || mx[j] > -INFINITY;
  }
  if (!any) return;
  if (vs != nullptr) {
    kn.accum_i8(sc, g, static_cast<const int8_t*>(vb), vs, a.d, live, n, acc);
  } else {
    kn.accum(sc, g, vb, f16, a.d, live, n, acc);
  }
}

// body(unit, thread) for units [0, units) on the pool, claimed a few at a time — about tasks_per_thread
// tasks per thread — instead of paying a contended claim per small unit (prefill has T·Hkv of them: 96
// for a 32-row SmolLM2 chunk).
template <typename Body>
void run_units(ThreadPool* pool, int64_t units, int64_t tasks_per_thread, const Body& body) {
  if (pool == nullptr || units <= 1) {
    for (int64_t u = 0; u < units; ++u) body(u, 0);
    return;
  }
  const int64_t per = std::max<int64_t>(1, units / (tasks_per_thread * pool->size()));
  pool->run((units + per - 1) / per, [&](int64_t task, int thread) {
    for (int64_t u = task * per; u < std::min(units, (task + 1) * per); ++u) body(u, thread);
  });
}

// Last live slot (exclusive) any of `rows` mask rows starting at mrow (S apart) sees: a causal chunk's first
// rows skip the chunk's later slots.
int64_t visible_end(const float* mrow, int64_t s, int rows, const int32_t* live, int64_t n_live) {
  int64_t n = 0;
  for (int r = 0; r < rows; ++r) {
    const float* m = mrow + r * s;
    int64_t i = n_live;
    while (i > n && m[live[i - 1]] <= kHiddenThreshold) --i;
    n = i;
  }
  return n;
}

// Query vectors per unit of the row-block prefill path: R = 16/g rows of the g heads of one kv head.
constexpr int kRowBlockVectors = 16;

// Prefill: units of (block of 32/g rows, kv head). A block visits the live slots up to the last one any
// of its rows sees (a causal chunk's first rows skip the chunk's later slots); rows that see nothing
// get the reference's uniform average.
void block_attention(const AttentionArgs& a, const int32_t* live, int64_t n_live, AttentionScratch& scratch,
                     ThreadPool* pool) {
  const int g = static_cast<int>(a.hq / a.hkv);
  const int64_t es = a.kv_dtype == DType::kF16 ? 2 : 4, d = a.d, S = a.s;
  const int rows_per_block = kBlockLanes / g;
  const int64_t blocks = (a.t + rows_per_block - 1) / rows_per_block;
  const int64_t units = blocks * a.hkv;
  auto body = [&](int64_t unit, int thread) {
    const int64_t h = unit % a.hkv, r0 = unit / a.hkv * rows_per_block;
    const int rows = static_cast<int>(std::min<int64_t>(rows_per_block, a.t - r0));
    const void* vb = static_cast<const char*>(a.v) + h * S * d * es;
    const int64_t n = visible_end(a.mask + r0 * S, S, rows, live, n_live);
    if (n > 0) {
      detail::AttnBlock b;
      b.q = a.q + (r0 * a.hq + h * g) * d;
      b.q_stride = a.hq * d;
      b.out = a.out + (r0 * a.hq + h * g) * d;
      b.out_stride = a.hq * d;
      b.rows = rows;
      b.g = g;
      b.d = d;
      b.k = static_cast<const char*>(a.k) + h * S * d * es;
      b.v = vb;
      b.f16 = a.kv_dtype == DType::kF16;
      b.mask = a.mask + r0 * S;
      b.mask_stride = S;
      b.slots = live;
      b.n = n;
      b.scale = a.scale;
      b.scratch = scratch.block.data() + thread * scratch.block_per_thread;
      detail::attn_block_avx512(b);
    }
    for (int r = 0; r < rows; ++r)
      if (!row_sees_a_slot(a.mask + (r0 + r) * S, live, n)) uniform_average(a, vb, g, a.out + ((r0 + r) * a.hq + h * g) * d);
  };
  // One unit per task: a causal chunk's later row blocks see more slots than its first ones, so a few
  // large tasks left one thread waiting on the other's last block (busy 1.79 of 2 threads on Qwen2.5's
  // 64 units); a unit is several µs and a claim tens of ns. 512-token prefills on 2 threads, one unit per
  // task against 4 tasks per thread: Qwen2.5 int4 +1.4-2.0 %, f16 +1.9 %; SmolLM2 int8 +0.7 %, f16 +0.5 %.
  run_units(pool, units, units, body);
}

// One KV head's view for a group of rows: its K/V cache planes, and buf split into the rows' query heads
// ([rows·g][d], copied in when `copy_queries`), their sums ([rows·g][d]) and their scores (the rest).
struct HeadViews {
  int g;
  int64_t nv;
  bool f16;
  const void* kb;
  const void* vb;
  float* qb;
  float* acc;
  float* sc;
};

HeadViews head_views(const AttentionArgs& a, int64_t h, int64_t r0, int rows, bool copy_queries, float* buf) {
  const int g = static_cast<int>(a.hq / a.hkv);
  const int64_t es = elem_bytes(a.kv_dtype), d = a.d, plane = h * a.s * d * es, nv = rows * g;
  HeadViews hv{g, nv, a.kv_dtype == DType::kF16, static_cast<const char*>(a.k) + plane, static_cast<const char*>(a.v) + plane,
               buf, buf + nv * d, buf + 2 * nv * d};
  if (copy_queries)
    for (int r = 0; r < rows; ++r)
      std::memcpy(hv.qb + r * g * d, a.q + ((r0 + r) * a.hq + h * g) * d, static_cast<size_t>(g * d) * sizeof(float));
  return hv;
}

// Kv head h of rows [r0, r0 + rows) together: their query heads as the heads of one unit over list[0, n)
// (the ISA's scores and P·V of rows·g heads), each row's softmax over its first count(r) slots with its own
// mask row (its probabilities past them 0), then normalized; a row for which sees(r) is false gets the
// uniform average. buf: [rows·g][d] query heads, [rows·g][d] sums, [rows·g][n] scores.
template <typename Count, typename Sees>
void heads_together(const AttentionArgs& a, const Kernels& kn, int64_t h, int64_t r0, int rows, const int32_t* list,
                    int64_t n, const Count& count, const Sees& sees, float* buf) {
  const HeadViews hv = head_views(a, h, r0, rows, n > 0, buf);
  const int g = hv.g;
  const int64_t d = a.d, S = a.s, nv = hv.nv;
  float* acc = hv.acc;  // [nv][d]
  float* sc = hv.sc;    // [nv][n]
  const bool i8 = a.kv_dtype == DType::kI8;  // then the kv head's per-slot scales go to the int8 kernels
  const float* ks = i8 ? a.k_scale + h * S : nullptr;
  const float* vs = i8 ? a.v_scale + h * S : nullptr;
  if (n > 0 && i8) kn.scores_i8(hv.qb, static_cast<int>(nv), static_cast<const int8_t*>(hv.kb), ks, d, list, n, sc);
  if (n > 0 && !i8) kn.scores(hv.qb, static_cast<int>(nv), hv.kb, hv.vb, hv.f16, d, list, n, sc);
  constexpr int kMaxRows = std::max<int>(kRowInvariantRows, kRowBlockVectors);  // rows_together, row blocks
  float sum[kMaxRows * 64];
  bool seen[kMaxRows], any = false;
  for (int r = 0; r < rows; ++r) {
    seen[r] = n > 0 && sees(r0 + r);
    any = any || seen[r];
  }
  for (int r = 0; r < rows; ++r) {
    const int64_t nr = seen[r] ? count(r0 + r) : 0;
    for (int j = 0; j < g; ++j) {
      float* sj = sc + (r * g + j) * n;
      float mx;
      if (seen[r]) sum[r * g + j] = softmax_row(a, kn, sj, nr, a.mask + (r0 + r) * S, list, &mx);
      std::memset(sj + nr, 0, static_cast<size_t>(n - nr) * sizeof(float));  // p = 0: adds exactly nothing
    }
  }
  if (any) {
    std::memset(acc, 0, static_cast<size_t>(nv * d) * sizeof(float));
    if (i8)
      kn.accum_i8(sc, static_cast<int>(nv), static_cast<const int8_t*>(hv.vb), vs, d, list, n, acc);
    else
      kn.accum(sc, static_cast<int>(nv), hv.vb, hv.f16, d, list, n, acc);
  }
  for (int r = 0; r < rows; ++r) {
    float* out = a.out + ((r0 + r) * a.hq + h * g) * d;
    if (!seen[r]) {
      uniform_average(a, hv.vb, g, out, vs);
      continue;
    }
    for (int j = 0; j < g; ++j) {
      const float inv = 1.0f / sum[r * g + j];
      for (int64_t e = 0; e < d; ++e) out[j * d + e] = acc[(r * g + j) * d + e] * inv;
    }
  }
}

// Prefill without the AVX-512 lane kernel: units of (R rows, kv head). The R·g query vectors of a unit go
// through the ISA's decode kernels as one group (heads_together), so each K/V row is read (and on AVX2
// widened from f16) once for R·g vectors instead of once per row; each (row, head) then takes its own mask
// row in the softmax over the union up to the last slot any of the rows sees. Needs scratch.block (sized for
// the prefill head dim).
void row_block_attention(const AttentionArgs& a, const Kernels& kn, const int32_t* live, int64_t n_live,
                         AttentionScratch& scratch, ThreadPool* pool) {
  const int g = static_cast<int>(a.hq / a.hkv);
  const int rows_per_block = std::max(1, kRowBlockVectors / g);
  const int64_t blocks = (a.t + rows_per_block - 1) / rows_per_block;
  auto body = [&](int64_t unit, int thread) {
    const int64_t h = unit % a.hkv, r0 = unit / a.hkv * rows_per_block;
    const int rows = static_cast<int>(std::min<int64_t>(rows_per_block, a.t - r0));
    const int64_t n = visible_end(a.mask + r0 * a.s, a.s, rows, live, n_live);
    heads_together(
        a, kn, h, r0, rows, live, n, [&](int64_t) { return n; },
        [&](int64_t r) { return row_sees_a_slot(a.mask + r * a.s, live, n); },
        scratch.block.data() + thread * scratch.block_per_thread);
  };
  run_units(pool, blocks * a.hkv, 4, body);
}

// The kernel the union path runs a step on, and how many consecutive rows share one walk of the union
// (trimmed to the last slot any of them sees; the decode kernels walk all of it for every row).
struct UnionKernel {
  enum Kind { kBlock, kRowBlock, kRows } kind = kRows;
  int64_t rows = 1;
};

UnionKernel union_kernel(const AttentionArgs& a, const AttentionScratch& scratch, int64_t n_live) {
  const int g = static_cast<int>(a.hq / a.hkv);
  if (a.kv_dtype == DType::kI8) return {UnionKernel::kRows, 1};  // int8 rows: the per-row kernels only
  // Prefill on AVX-512: blocks of rows × the group's heads along the vector lanes (attn_block_avx512).
  if (a.t > 1 && a.softcap == 0 && active_isa() >= Isa::kAvx512 && detail::attn_block_supports(a.d) &&
      a.d <= scratch.block_d && g <= 16)
    return {UnionKernel::kBlock, kBlockLanes / g};
  // Other prefill: blocks of rows through the decode kernels, where the block buffer holds them.
  const int64_t nv_max = std::max(kRowBlockVectors, g);  // query vectors of a row-block unit
  if (a.t > 1 && g <= 2 * kRowBlockVectors && a.d <= scratch.block_d &&
      nv_max * (2 * a.d + n_live) <= scratch.block_per_thread)
    return {UnionKernel::kRowBlock, std::max(1, kRowBlockVectors / g)};
  return {UnionKernel::kRows, 1};
}

// Whether a step's (row, kv head) units are split over the threads: decode has only Hkv units (often
// fewer than twice the threads), so each unit's segments become separate tasks (flash-decoding) whose
// partials are merged afterwards in the same order a whole unit merges them — splitting changes which
// thread computes a segment, never a bit. Steps of more than kRowInvariantRows rows have units enough.
bool splits(const AttentionArgs& a, const AttentionScratch& scratch, int threads) {
  const int g = static_cast<int>(a.hq / a.hkv);
  return threads > 1 && a.hkv * a.t < 2 * threads && a.t <= kRowInvariantRows && scratch.group == g &&
         scratch.d == a.d;
}

int64_t segments_of(int64_t n) { return (n + kSegmentSlots - 1) / kSegmentSlots; }

// Whether a step's rows go through the kernels together, one unit per kv head: the rows' query heads as
// the heads of one unit (scores, and P·V, of t·g heads) over the longest row's list, each row's softmax
// over its own first slots and mask, its probabilities past them 0 (p·v = 0 adds exactly nothing to a sum
// that started at +0). A sequence's verification rows see its slots and the drafts up to their own, so
// each row's list is a prefix of the last one's (checked: a paged pool may order the slots otherwise);
// together they read each K and V row once instead of once per row. On AVX-512 a head's scores and sums
// do not depend on the heads beside it (each score is the plain chain over D, each output element the
// slots' FMAs in order; int8 caches the same with the slots' scales applied in the kernels), so every row
// keeps its own bits; the other ISAs' kernels are not shown to.
// Only rows of one segment (a longer row merges segments), a group of at most 64 heads, and what the
// scratch holds.
// Returns the row whose list every other row's is a prefix of (-1: not so, or not together).
int64_t rows_together(const AttentionArgs& a, const Kernels& kn, const RowLists& rl, const AttentionScratch& scratch) {
  const int64_t g = a.hq / a.hkv;
  if (a.t < 2 || a.t > kRowInvariantRows || g > 64 || kn.scores != detail::attn_scores_avx512 || scratch.group != g ||
      scratch.d != a.d)
    return -1;
  int64_t longest = 0;
  for (int64_t r = 1; r < a.t; ++r)
    if (rl.count(r) > rl.count(longest)) longest = r;
  const int64_t n = rl.count(longest);
  if (n > kSegmentSlots || a.t * g * (n + 2 * a.d) > scratch.rows_per_thread) return -1;
  for (int64_t r = 0; r < a.t; ++r)
    if (rl.of(r) != rl.of(longest) &&
        std::memcmp(rl.of(r), rl.of(longest), static_cast<size_t>(rl.count(r)) * sizeof(int32_t)) != 0)
      return -1;
  return longest;
}

// Folds one segment's unnormalized partial (acc [g][d], max mx[g], Σ p sum[g]) into the running one
// (out [g][d], m[g], l[g]; l = 0: nothing yet). The one merge every path uses, segment after segment in
// list order, so a row's bits depend only on its own list.
void merge_segment(int g, int64_t d, const float* acc, const float* mx, const float* sum, float* out, float* m, float* l) {
  for (int j = 0; j < g; ++j) {
    if (sum[j] == 0) continue;  // the row sees nothing in this segment
    float* o = out + j * d;
    const float* x = acc + j * d;
    if (l[j] == 0) {
      if (o != x) std::memcpy(o, x, static_cast<size_t>(d) * sizeof(float));
      m[j] = mx[j];
      l[j] = sum[j];
      continue;
    }
    const float m2 = std::max(m[j], mx[j]);
    const float wo = std::exp(m[j] - m2), wx = std::exp(mx[j] - m2);
    for (int64_t e = 0; e < d; ++e) o[e] = o[e] * wo + x[e] * wx;
    l[j] = l[j] * wo + sum[j] * wx;
    m[j] = m2;
  }
}

void normalize(int g, int64_t d, const float* l, float* out) {
  for (int j = 0; j < g; ++j) {
    const float inv = 1.0f / l[j];
    for (int64_t e = 0; e < d; ++e) out[j * d + e] *= inv;
  }
}

// Kv head h of rows [r0, r0 + rows) of one sequence together, in segments: each row's list is a prefix of
// `list` (the longest's, n slots), so segment k of every row is segment k of `list` cut at the row's own
// count. Per segment, the rows' query heads go through the kernels as the heads of one unit (each K/V row
// read once for all of them), each row's softmax over its part with its own mask row and its
// probabilities past it 0 (adding exactly nothing), and each row's partial merged as whole_unit merges
// it — on AVX-512 the same bits as the row alone (rows_together). buf: [rows·g][d] query heads,
// [rows·g][d] sums, [rows·g][kSegmentSlots] scores. Every row sees a slot (own lists, count ≥ 1).
void rows_in_segments(const AttentionArgs& a, const Kernels& kn, int64_t h, int64_t r0, int rows, const int32_t* list,
                      int64_t n, const RowLists& rl, float* buf) {
  const HeadViews hv = head_views(a, h, r0, rows, true, buf);
  const int g = hv.g;
  const int64_t d = a.d, S = a.s, nv = hv.nv;
  const bool f16 = hv.f16;
  const void* kb = hv.kb;
  const void* vb = hv.vb;
  const float* qb = hv.qb;
  float* acc = hv.acc;  // [nv][d]
  float* sc = hv.sc;    // [nv][len]
  constexpr int kMaxHeads = 64;
  float m[kMaxHeads], l[kMaxHeads], mx[kMaxHeads], sum[kMaxHeads];
  const bool i8 = a.kv_dtype == DType::kI8;  // then the kv head's per-slot scales go to the int8 kernels
  const float* ks = i8 ? a.k_scale + h * S : nullptr;
  const float* vs = i8 ? a.v_scale + h * S : nullptr;
  std::fill(l, l + nv, 0.0f);
  for (int64_t i0 = 0; i0 < n; i0 += kSegmentSlots) {
    const int64_t len = std::min(kSegmentSlots, n - i0);
    if (i8)
      kn.scores_i8(qb, static_cast<int>(nv), static_cast<const int8_t*>(kb), ks, d, list + i0, len, sc);
    else
      kn.scores(qb, static_cast<int>(nv), kb, vb, f16, d, list + i0, len, sc);
    for (int r = 0; r < rows; ++r) {
      const int64_t nr = std::clamp<int64_t>(rl.count(r0 + r) - i0, 0, len);
      for (int j = 0; j < g; ++j) {
        float* sj = sc + (r * g + j) * len;
        sum[r * g + j] = nr > 0 ? softmax_row(a, kn, sj, nr, a.mask + (r0 + r) * S, list + i0, &mx[r * g + j]) : 0.0f;
        std::memset(sj + nr, 0, static_cast<size_t>(len - nr) * sizeof(float));  // p = 0: adds exactly nothing
      }
    }
    std::memset(acc, 0, static_cast<size_t>(nv * d) * sizeof(float));
    if (i8)
      kn.accum_i8(sc, static_cast<int>(nv), static_cast<const int8_t*>(vb), vs, d, list + i0, len, acc);
    else
      kn.accum(sc, static_cast<int>(nv), vb, f16, d, list + i0, len, acc);
    for (int r = 0; r < rows; ++r)
      merge_segment(g, d, acc + r * g * d, mx + r * g, sum + r * g, a.out + ((r0 + r) * a.hq + h * g) * d, m + r * g, l + r * g);
  }
  for (int r = 0; r < rows; ++r) normalize(g, d, l + r * g, a.out + ((r0 + r) * a.hq + h * g) * d);
}

// Units of (row, kv head), each over its row's own list (or the union, which a row's mask then trims) in
// segments of kSegmentSlots: each segment an unnormalized partial, merged in list order (merge_segment).
// Every step's rows — decode, verification, packed sequences, prefill chunks — take this one order, so a
// row's result depends only on its query, its list and the cache, never on the rows beside it, the
// thread count or the step's size (docs/determinism.md).
void row_attention(const AttentionArgs& a, const Kernels& kn, const RowLists& rl, AttentionScratch& scratch,
                   ThreadPool* pool) {
  const int g = static_cast<int>(a.hq / a.hkv);
  const int64_t es = elem_bytes(a.kv_dtype), d = a.d, S = a.s;
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t units = a.hkv * a.t;  // (row, kv head) pairs
  const bool i8 = a.kv_dtype == DType::kI8;
  auto unit_ptrs = [&](int64_t unit, const float*& q, float*& out, const void*& kb, const void*& vb, const float*& mrow) {
    const int64_t h = unit % a.hkv, r = unit / a.hkv;
    q = a.q + (r * a.hq + h * g) * d;
    out = a.out + (r * a.hq + h * g) * d;
    kb = static_cast<const char*>(a.k) + h * S * d * es;
    vb = static_cast<const char*>(a.v) + h * S * d * es;
    mrow = a.mask + r * S;
  };
  // An i8 cache's scales of the unit's kv head (null otherwise).
  auto k_scales = [&](int64_t unit) { return i8 ? a.k_scale + unit % a.hkv * S : nullptr; };
  auto v_scales = [&](int64_t unit) { return i8 ? a.v_scale + unit % a.hkv * S : nullptr; };
  // A whole unit: the first segment's sums straight into out, later ones through the thread's scratch
  // (past the scores of a segment: a row with more than one segment has S > kSegmentSlots + d + 2).
  auto whole_unit = [&](int64_t unit, int thread) {
    const float *q, *mrow;
    float* out;
    const void *kb, *vb;
    unit_ptrs(unit, q, out, kb, vb, mrow);
    const int64_t r = unit / a.hkv, n = rl.count(r);
    if (!rl.sees_a_slot(r, mrow)) return uniform_average(a, vb, g, out, v_scales(unit));
    float m[64], l[64], mx[64], sum[64];
    float* sc = scratch.scores.data() + thread * scratch.per_thread;
    for (int j0 = 0; j0 < g; j0 += 64) {  // g ≤ 64 per pass keeps the sums on the stack
      const int gg = std::min(64, g - j0);
      float* o = out + j0 * d;
      float* acc = sc + gg * kSegmentSlots;
      std::fill(l, l + gg, 0.0f);
      for (int64_t i0 = 0; i0 < n; i0 += kSegmentSlots) {
        float* dst = i0 == 0 ? o : acc;
        partial_attention(a, kn, q + j0 * d, kb, vb, mrow, rl.of(r) + i0, std::min(kSegmentSlots, n - i0), gg, sc, dst, mx,
                          sum, k_scales(unit), v_scales(unit));
        merge_segment(gg, d, dst, mx, sum, o, m, l);
      }
      normalize(gg, d, l, o);
    }
  };

  if (const int64_t longest = rows_together(a, kn, rl, scratch); longest >= 0) {
    run_units(pool, a.hkv, 1, [&](int64_t h, int thread) {
      heads_together(
          a, kn, h, 0, static_cast<int>(a.t), rl.of(longest), rl.count(longest), [&](int64_t r) { return rl.count(r); },
          [&](int64_t r) { return rl.sees_a_slot(r, a.mask + r * S); },
          scratch.rows.data() + thread * scratch.rows_per_thread);
    });
    return;
  }
  // Prefill chunks on AVX-512: blocks of rows whose lists nest (a causal chunk of one sequence) take
  // rows_in_segments, each K/V row read once per block instead of once per row; other blocks row by row.
  // int8 caches take it over the union too (they have no union kernel of their own): there every row's
  // list is the union, trimmed by its mask in the softmax exactly as whole_unit trims it, so the block
  // gives each row whole_unit's bits (the int8 kernels' scores and sums do not depend on the heads beside
  // a head); a block with a row that sees nothing goes row by row.
  if (const int rows = std::max(1, kBlockLanes / g);
      a.t > kRowInvariantRows && (rl.row_slots != nullptr || i8) && rows > 1 &&
      kn.scores == detail::attn_scores_avx512 &&
      scratch.group == g && scratch.d == d && a.d <= scratch.block_d &&
      rows * g * (2 * d + kSegmentSlots) <= scratch.block_per_thread) {
    const int64_t blocks = (a.t + rows - 1) / rows;
    run_units(pool, blocks * a.hkv, blocks * a.hkv, [&](int64_t unit, int thread) {
      const int64_t h = unit % a.hkv, r0 = unit / a.hkv * rows;
      const int nr = static_cast<int>(std::min<int64_t>(rows, a.t - r0));
      int64_t longest = r0;
      bool nested = true;
      for (int64_t r = r0; r < r0 + nr; ++r) {
        nested = nested && rl.count(r) > 0 && (rl.row_slots != nullptr || rl.sees_a_slot(r, a.mask + r * S));
        if (rl.count(r) > rl.count(longest)) longest = r;
      }
      for (int64_t r = r0; nested && r < r0 + nr; ++r)
        nested = std::memcmp(rl.of(r), rl.of(longest), static_cast<size_t>(rl.count(r)) * sizeof(int32_t)) == 0;
      if (!nested) {
        for (int64_t r = r0; r < r0 + nr; ++r) whole_unit(r * a.hkv + h, thread);
        return;
      }
      rows_in_segments(a, kn, h, r0, nr, rl.of(longest), rl.count(longest), rl,
                       scratch.block.data() + thread * scratch.block_per_thread);
    });
    return;
  }
  // Split: one task per (unit, segment) from first[r] on, each partial to its own place in scratch.partial.
  int64_t first[kRowInvariantRows + 1] = {};
  const int64_t stride = g * (d + 2);
  bool split = splits(a, scratch, threads);
  if (split) {
    for (int64_t r = 0; r < a.t; ++r) first[r + 1] = first[r] + a.hkv * std::max<int64_t>(1, segments_of(rl.count(r)));
    split = first[a.t] > units && static_cast<size_t>(first[a.t] * stride) <= scratch.partial.size() && g <= 64;
  }
  if (!split) {
    run_units(pool, units, 8, whole_unit);
    return;
  }
  float* partial = scratch.partial.data();
  pool->run(first[a.t], [&](int64_t task, int thread) {
    int64_t r = 0;
    while (task >= first[r + 1]) ++r;
    const int64_t n = rl.count(r), parts = std::max<int64_t>(1, segments_of(n));
    const int64_t unit = r * a.hkv + (task - first[r]) / parts, p = (task - first[r]) % parts;
    const float *q, *mrow;
    float* out;
    const void *kb, *vb;
    unit_ptrs(unit, q, out, kb, vb, mrow);
    const int64_t i0 = std::min(n, p * kSegmentSlots), i1 = std::min(n, i0 + kSegmentSlots);
    float* acc = partial + task * stride;
    partial_attention(a, kn, q, kb, vb, mrow, rl.of(r) + i0, i1 - i0, g,
                      scratch.scores.data() + thread * scratch.per_thread, acc, acc + g * d, acc + g * d + g, k_scales(unit),
                      v_scales(unit));
  });
  for (int64_t unit = 0; unit < units; ++unit) {
    const int64_t r = unit / a.hkv, parts = std::max<int64_t>(1, segments_of(rl.count(r)));
    const float *q, *mrow;
    float* out;
    const void *kb, *vb;
    unit_ptrs(unit, q, out, kb, vb, mrow);
    if (!rl.sees_a_slot(r, mrow)) {
      uniform_average(a, vb, g, out, v_scales(unit));
      continue;
    }
    float m[64], l[64];
    std::fill(l, l + g, 0.0f);
    const float* unit_partial = partial + (first[r] + (unit % a.hkv) * parts) * stride;
    for (int64_t p = 0; p < parts; ++p) {
      const float* part = unit_partial + p * stride;
      merge_segment(g, d, part, part + g * d, part + g * d + g, out, m, l);
    }
    normalize(g, d, l, out);
  }
}

}  // namespace

AttentionScratch::AttentionScratch(int threads_, int64_t group_, int64_t s, int64_t d_, int64_t block_d_,
                                   int64_t max_rows)
    : scores(static_cast<size_t>(threads_ * group_ * scores_slots(s, d_))),
      partial(static_cast<size_t>(std::clamp<int64_t>(max_rows, 1, kRowInvariantRows) *
                                  std::max(max_split_tasks(threads_), kSplitKvHeads * ((s + kSegmentSlots - 1) / kSegmentSlots)) *
                                  group_ * (d_ + 2))),
      per_thread(group_ * scores_slots(s, d_)),
      group(group_),
      d(d_),
      threads(threads_) {
  if (max_rows > 1 && max_rows <= kRowInvariantRows && d_ > 0) {  // step methods (rows_together)
    // Rounded to 16 floats so every thread's buffer stays 64-byte aligned.
    rows_per_thread = (std::min(max_rows * group_ * (s + 2 * d_), kRowsTogetherFloats) + 15) / 16 * 16;
    rows = AlignedArray<float>(static_cast<size_t>(threads_ * rows_per_thread), AlignedArray<float>::Init::kNone);
  }
  if (block_d_ > 0) {
    // Rounded to 16 floats so every thread's buffer stays 64-byte aligned.
    block_per_thread = (detail::attn_block_scratch_floats(s, block_d_) + 15) / 16 * 16;
    block_d = block_d_;
    block = AlignedArray<float>(static_cast<size_t>(threads_ * block_per_thread), AlignedArray<float>::Init::kNone);
  }
}

int64_t live_slots(const float* mask, int64_t t, int64_t s, int32_t* slots) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return detail::live_slots_avx512(mask, t, s, slots);
  if (isa >= Isa::kAvx2) return detail::live_slots_avx2(mask, t, s, slots);
  return detail::live_slots_scalar(mask, t, s, slots);
}

LiveSlots::LiveSlots(int64_t t_, int64_t s_)
    : t(t_),
      s(s_),
      slots(static_cast<size_t>(s_)),
      row_slots(t_ > 1 ? static_cast<size_t>(t_ * s_) : 0),
      row_n(static_cast<size_t>(t_)),
      row_end(static_cast<size_t>(t_)),
      bits(static_cast<size_t>((s_ + 63) / 64)) {}

size_t LiveSlots::bytes() const {
  return (slots.size() + row_slots.size()) * sizeof(int32_t) + (row_n.size() + row_end.size()) * sizeof(int64_t) +
         bits.size() * sizeof(uint64_t);
}

void scan_live_slots(const float* mask, LiveSlots& live) {
  if (live.t <= 1) {  // decode: the row's list is the union
    live.n = live_slots(mask, live.t, live.s, live.slots.data());
    if (live.t == 1) live.row_n[0] = live.row_end[0] = live.n;
    live.seen = live.n;
    return;
  }
  std::fill(live.bits.begin(), live.bits.end(), uint64_t{0});
  const Isa isa = active_isa();
  const detail::ScanRowsFn scan = isa >= Isa::kAvx512 ? detail::scan_rows_avx512
                                  : isa >= Isa::kAvx2 ? detail::scan_rows_avx2
                                                      : detail::scan_rows_scalar;
  scan(mask, live.t, live.s, live.row_slots.data(), live.row_n.data(), live.bits.data());
  int64_t n = 0;
  for (size_t w = 0; w < live.bits.size(); ++w)
    for (uint64_t b = live.bits[w]; b != 0; b &= b - 1) live.slots[static_cast<size_t>(n++)] = static_cast<int32_t>(w * 64 + __builtin_ctzll(b));
  live.n = n;
  live.seen = 0;
  for (int64_t r = 0; r < live.t; ++r) {
    const size_t ri = static_cast<size_t>(r);
    live.seen += live.row_n[ri];
    live.row_end[ri] = 0;
    if (live.row_n[ri] == 0) continue;
    const int32_t last = live.row_slots[static_cast<size_t>(r * live.s + live.row_n[ri] - 1)];
    live.row_end[ri] = std::lower_bound(live.slots.data(), live.slots.data() + n, last) - live.slots.data() + 1;
  }
}

void attention(const AttentionArgs& a, const int32_t* live, int64_t n_live, AttentionScratch& scratch, ThreadPool* pool) {
  const UnionKernel k = union_kernel(a, scratch, n_live);
  if (k.kind == UnionKernel::kBlock) return block_attention(a, live, n_live, scratch, pool);
  const Kernels kn = kernels_for(active_isa());
  if (k.kind == UnionKernel::kRowBlock) return row_block_attention(a, kn, live, n_live, scratch, pool);
  RowLists rl;
  rl.slots = live;
  rl.n = n_live;
  row_attention(a, kn, rl, scratch, pool);
}

bool walks_own_slots(const AttentionArgs& a, const LiveSlots& live, const AttentionScratch& scratch) {
  if (live.t <= 1 || live.seen == 0) return false;
  const UnionKernel k = union_kernel(a, scratch, live.n);
  int64_t walked = 0;
  if (k.kind == UnionKernel::kRows) {
    walked = live.t * live.n;
  } else {
    for (int64_t r0 = 0; r0 < live.t; r0 += k.rows) {
      const int64_t r1 = std::min(live.t, r0 + k.rows);
      walked += (r1 - r0) * *std::max_element(live.row_end.begin() + r0, live.row_end.begin() + r1);
    }
  }
  const int64_t waste = walked - live.seen;
  return 100 * waste >= kOwnWastePercent * live.seen && waste >= kOwnWastePerRow * live.t;
}

void attention(const AttentionArgs& a, const LiveSlots& live, AttentionScratch& scratch, ThreadPool* pool, RowPath path) {
  const bool own = path == RowPath::kOwn ||
                   (path == RowPath::kChoose && (live.t <= kRowInvariantRows || walks_own_slots(a, live, scratch)));
  if (!own || live.t <= 1) return attention(a, live.slots.data(), live.n, scratch, pool);
  RowLists rl;
  rl.slots = live.slots.data();
  rl.n = live.n;
  rl.row_slots = live.row_slots.data();
  rl.row_n = live.row_n.data();
  rl.stride = live.s;
  row_attention(a, kernels_for(active_isa()), rl, scratch, pool);
}

}  // namespace hfs::cpu_fast
