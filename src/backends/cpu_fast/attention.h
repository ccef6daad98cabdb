// cpu_fast/attention.h — decode/prefill attention whose cost follows the LIVE cache entries.
//
// Semantics are the reference `attention` op's (ops.h): scores = q·k·scale, softcap if > 0, + mask,
// softmax over S in f32, then ·v; grouped-query (Hq % Hkv == 0). The mask [T, S] is additive with
// hidden = -1e30. A slot hidden from every row contributes exp(-1e30 - max) = 0 to every row, so it is
// skipped: `live_slots` scans the mask once per step (shared by all layers using it) and the kernel
// only touches those slots. A row that sees no slot at all degenerates, as in the reference, to the
// uniform average of v over all S slots.
//
//   int64_t n = hfs::cpu_fast::live_slots(mask, T, S, slots);       // once per step per mask
//   hfs::cpu_fast::attention(args, slots, n, scratch, &pool);
#pragma once

#include <cstdint>

#include "backends/cpu_fast/linear.h"  // AlignedArray
#include "hfstatic/dtype.h"

namespace hfs::cpu_fast {

class ThreadPool;

// Values at or below this count as hidden when deciding which slots to visit (the exact mask value is
// still added for visited slots, so any finite mask keeps reference semantics).
inline constexpr float kHiddenThreshold = -1e29f;

// Writes the slots visible to at least one row of mask [T, S] to `slots` (capacity S), ascending.
int64_t live_slots(const float* mask, int64_t t, int64_t s, int32_t* slots);

struct AttentionArgs {
  const float* q = nullptr;   // [T, Hq, D]
  const void* k = nullptr;    // [Hkv, S, D] in kv_dtype
  const void* v = nullptr;    // [Hkv, S, D] in kv_dtype
  DType kv_dtype = DType::kF32;  // f32 or f16
  const float* mask = nullptr;   // [T, S]
  float* out = nullptr;       // [T, Hq, D]
  int64_t t = 0, hq = 0, hkv = 0, s = 0, d = 0;
  float scale = 1.0f, softcap = 0.0f;
};

// Buffers sized at load (execute never allocates): per-thread scores, threads × (Hq/Hkv) × S floats,
// and the partial results of a decode step split over slot ranges (see attention()).
// `block_d` > 0 (the largest head dim of a method with prefill chunks) also sizes the per-thread buffer of
// the blocked prefill kernel (16 lanes × S scores plus the transposed queries).
struct AttentionScratch {
  AttentionScratch() = default;
  AttentionScratch(int threads, int64_t group, int64_t s, int64_t d, int64_t block_d = 0);
  AlignedArray<float> scores;
  AlignedArray<float> partial;  // [kMaxSplitTasks(threads)][group × (d + 2)]: Σ p·v, max, Σ p per head
  AlignedArray<float> block;    // [threads][block_per_thread]
  int64_t per_thread = 0, group = 0, d = 0, block_per_thread = 0, block_d = 0;
  int threads = 0;
};

// Decode has only Hkv (row, kv-head) units of work, often fewer than twice the threads (SmolLM2: 3 on 2
// threads), so a step with few units splits each unit's live slots into ranges (flash-decoding): every
// range yields an unnormalized partial (Σ p·v, its max, Σ p) and the caller merges them exactly.
// `scratch` must hold ≥ pool size threads (1 without a pool) and match the group size and D. Does not
// allocate.
void attention(const AttentionArgs& a, const int32_t* live, int64_t n_live, AttentionScratch& scratch, ThreadPool* pool);

}  // namespace hfs::cpu_fast
