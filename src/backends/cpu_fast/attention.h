// cpu_fast/attention.h — decode/prefill attention whose cost follows the LIVE cache entries.
//
// Semantics are the reference `attention` op's (ops.h): scores = q·k·scale, softcap if > 0, + mask,
// softmax over S in f32, then ·v; grouped-query (Hq % Hkv == 0). The mask [T, S] is additive with
// hidden = -1e30. A slot hidden from a row contributes exp(-1e30 - max) = 0 to it, so it is skipped:
// `scan_live_slots` reads the mask once per step (shared by all layers using it) and lists the slots each
// row sees and their union; the kernel only touches those. Every row walks its own list in slot order, in
// the same segments and merge order whatever the step (so a row costs what it sees, not what the step
// sees, and its bits are its own: the host keeps a sequence's slots ascending in its positions,
// llm/sequence_pool.h). A row that sees no slot at all degenerates, as in the reference, to the uniform
// average of v over all S slots.
//
//   LiveSlots live(T, S);                                      // at compile time
//   hfs::cpu_fast::scan_live_slots(mask, live);                // once per step per mask
//   hfs::cpu_fast::attention(args, live, scratch, &pool);      // each row over its own list
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu_fast/linear.h"  // AlignedArray
#include "hfstatic/dtype.h"

namespace hfs::cpu_fast {

class ThreadPool;

// Values at or below this count as hidden when deciding which slots to visit (the exact mask value is
// still added for visited slots, so any finite mask keeps reference semantics).
inline constexpr float kHiddenThreshold = -1e29f;

// Writes the slots visible to at least one row of mask [T, S] to `slots` (capacity S), ascending.
int64_t live_slots(const float* mask, int64_t t, int64_t s, int32_t* slots);

// The slots each row of a mask [T, S] sees and their union. Sized at compile time: the per-row lists hold
// T × S slots (the mask's own size), so a step never allocates.
struct LiveSlots {
  LiveSlots() = default;
  LiveSlots(int64_t t, int64_t s);
  size_t bytes() const;
  int64_t t = 0, s = 0;
  std::vector<int32_t> slots;  // the union, ascending: [0, n)
  int64_t n = 0;
  std::vector<int32_t> row_slots;  // row r's, ascending: [r·S, r·S + row_n[r])
  std::vector<int64_t> row_n;
  std::vector<int64_t> row_end;  // 1 + the union position of row r's last slot (0: it sees none)
  int64_t seen = 0;              // Σ row_n: the (row, slot) pairs the rows see
  std::vector<uint64_t> bits;    // the union as a bitmap [S / 64], built while the rows are scanned
};

// Fills `live` from mask [live.t, live.s]: each row is read once, its visible slots appended to its own
// list and or-ed into the union. A single row (decode) takes the union scan alone.
void scan_live_slots(const float* mask, LiveSlots& live);

struct AttentionArgs {
  const float* q = nullptr;   // [T, Hq, D]
  const void* k = nullptr;    // [Hkv, S, D] in kv_dtype
  const void* v = nullptr;    // [Hkv, S, D] in kv_dtype
  DType kv_dtype = DType::kF32;  // f32, f16 or i8 (then k_scale/v_scale: row x = scale · q)
  const float* k_scale = nullptr;  // [Hkv, S] (i8 caches)
  const float* v_scale = nullptr;
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
  // `max_rows`: the most rows of a step (the split partials of up to kRowInvariantRows rows are held).
  AttentionScratch(int threads, int64_t group, int64_t s, int64_t d, int64_t block_d = 0, int64_t max_rows = 1);
  AlignedArray<float> scores;
  AlignedArray<float> partial;  // [rows × max split tasks][group × (d + 2)]: Σ p·v, max, Σ p per head
  AlignedArray<float> block;    // [threads][block_per_thread]
  // [threads][rows_per_thread]: a multi-row step's rows together (attention.cpp, rows_together): their
  // query heads, scores and sums for one kv head.
  AlignedArray<float> rows;
  int64_t per_thread = 0, group = 0, d = 0, block_per_thread = 0, block_d = 0, rows_per_thread = 0;
  int threads = 0;
};

// Every row of every step walks its own list (the union for one row) in segments of kSegmentSlots
// slots, each an unnormalized partial, merged in list order: a row's output is bit for bit the same
// whatever rows share its step, however many rows the step has (decode, draft verification, packed
// sequences, prefill chunks) and on any thread count (docs/determinism.md). Steps of up to
// kRowInvariantRows rows may split a row's segments over the threads (the merge is the same) or take a
// sequence's rows together (rows_together); longer steps take blocks of a sequence's rows together,
// segment by segment (rows_in_segments, AVX-512), with the same bits per row.
inline constexpr int64_t kRowInvariantRows = 16;
inline constexpr int64_t kSegmentSlots = 256;

// Decode has only Hkv (row, kv-head) units of work, often fewer than twice the threads (SmolLM2: 3 on 2
// threads), so a step with few units computes each unit's segments as separate tasks (flash-decoding):
// every segment yields an unnormalized partial (Σ p·v, its max, Σ p), merged afterwards in list order.
// `scratch` must hold ≥ pool size threads (1 without a pool) and match the group size and D. Does not
// allocate.
// Every row walks the union `live` (skipping what its mask row hides).
void attention(const AttentionArgs& a, const int32_t* live, int64_t n_live, AttentionScratch& scratch, ThreadPool* pool);

// Which slots the rows of a step walk: each row its own list (kOwn, the default: units of (row, kv head)
// through the decode kernels in segments, row-invariant as above), the union (every row skips what its
// mask hides; prefill chunks take the blocked kernels, which read each K/V row once per block of rows but
// round differently per row count), or kChoose: own lists up to kRowInvariantRows rows, above whichever
// walks_own_slots() picks. Only kOwn is batch- and chunking-invariant.
enum class RowPath { kChoose, kUnion, kOwn };
void attention(const AttentionArgs& a, const LiveSlots& live, AttentionScratch& scratch, ThreadPool* pool,
               RowPath path = RowPath::kOwn);

// The union path walks, per block of rows its kernel takes together, the union up to the last slot any of
// them sees (every row the whole union on the decode kernels); what the rows do not see of that is waste.
// Rows of one sequence (a causal chunk, a sliding window wider than the step) waste at most the staircase
// of a block, under 16 slots per row on average, and keep the union and its blocked kernels, which read
// each K/V row once per block. Rows of different sequences packed into one step waste the other
// sequences' slots: once the waste is at least kOwnWastePercent of what the rows see and kOwnWastePerRow
// slots per row, each row walks its own list (on it a row costs about 1.1× what it costs in a block).
inline constexpr int64_t kOwnWastePercent = 25;
inline constexpr int64_t kOwnWastePerRow = 32;
bool walks_own_slots(const AttentionArgs& a, const LiveSlots& live, const AttentionScratch& scratch);

}  // namespace hfs::cpu_fast
