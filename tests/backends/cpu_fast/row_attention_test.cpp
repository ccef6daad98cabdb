// Attention over rows of different sequences packed into one step: each row sees only its own part of a
// shared cache pool, so it walks its own live-slot list (LiveSlots::per_row) instead of the union. Every
// case runs against the reference `attention` kernel (what the cpu_ref backend runs), on each ISA path,
// and checks which path the scan chose so the per-row path is the one under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu_fast/attention.h"
#include "backends/cpu_fast/backend.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/ext/ops.h"
#include "isa_fixture.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

constexpr float kHidden = -1e30f;

// What a row sees: slots [first, end) of the pool, the slot `bias` (if inside) with a finite -1.5.
struct RowView {
  int64_t first = 0, end = 0, bias = -1;
};

std::vector<float> mask_of(const std::vector<RowView>& rows, int64_t S) {
  std::vector<float> m(rows.size() * static_cast<size_t>(S), kHidden);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t j = rows[r].first; j < rows[r].end; ++j) m[r * S + j] = j == rows[r].bias ? -1.5f : 0.0f;
  return m;
}

// Decode rows of `lengths.size()` sequences, sequence i in slots [i·per_seq, i·per_seq + lengths[i]);
// window > 0 keeps only each row's last `window` slots (a sliding-window layer).
std::vector<RowView> decode_rows(const std::vector<int64_t>& lengths, int64_t per_seq, int64_t window = 0) {
  std::vector<RowView> rows;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t base = static_cast<int64_t>(i) * per_seq, end = base + lengths[i];
    rows.push_back({window > 0 ? std::max(base, end - window) : base, end, base + 1});
  }
  return rows;
}

struct Case {
  int64_t hq, hkv, D;
  bool f16;
  float cap = 0.0f;
};

struct Data {
  std::vector<float> q, k, v;
  std::vector<uint16_t> kh, vh;
};

Data make_data(int64_t T, int64_t S, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  hfs::test::Normal<float> nd(0.0f, 1.0f);
  Data x;
  x.q.resize(static_cast<size_t>(T * c.hq * c.D));
  x.k.resize(static_cast<size_t>(c.hkv * S * c.D));
  x.v.resize(x.k.size());
  for (auto& e : x.q) e = nd(rng);
  for (auto& e : x.k) e = nd(rng);
  for (auto& e : x.v) e = nd(rng);
  if (c.f16) {
    x.kh.resize(x.k.size());
    x.vh.resize(x.v.size());
    for (size_t i = 0; i < x.k.size(); ++i) {
      x.kh[i] = f32_to_f16(x.k[i]);
      x.vh[i] = f32_to_f16(x.v[i]);
    }
  }
  return x;
}

std::vector<TensorView> kernel_inputs(Data& x, std::vector<float>& mask, int64_t T, int64_t S, const Case& c) {
  const DType kv = c.f16 ? DType::kF16 : DType::kF32;
  void* k = c.f16 ? static_cast<void*>(x.kh.data()) : x.k.data();
  void* v = c.f16 ? static_cast<void*>(x.vh.data()) : x.v.data();
  return {TensorView(x.q.data(), DType::kF32, {1, T, c.hq, c.D}), TensorView(k, kv, {1, c.hkv, S, c.D}),
          TensorView(v, kv, {1, c.hkv, S, c.D}), TensorView(mask.data(), DType::kF32, {1, 1, T, S})};
}

Attrs attrs_of(const Case& c) {
  Attrs a{{"scale", Value(1.0 / std::sqrt(static_cast<double>(c.D)))}};
  if (c.cap > 0) a.emplace("softcap", Value(static_cast<double>(c.cap)));
  return a;
}

// The reference op's output for these inputs.
std::vector<float> reference(Data& x, std::vector<float>& mask, int64_t T, int64_t S, const Case& c) {
  std::vector<float> out(x.q.size());
  const std::vector<TensorView> in = kernel_inputs(x, mask, T, S, c);
  const std::vector<TensorView> outs = {TensorView(out.data(), DType::kF32, {1, T, c.hq, c.D})};
  const Status st = run_reference(NodeDef{"attention", {}, {}, attrs_of(c)}, in, outs);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return out;
}

// The kernel's arguments for T query rows of `x` from row q0 on, over S cached slots.
AttentionArgs args_of(Data& x, std::vector<float>& mask, std::vector<float>& out, int64_t q0, int64_t T, int64_t S,
                      const Case& c) {
  AttentionArgs a;
  a.q = x.q.data() + q0 * c.hq * c.D;
  a.k = c.f16 ? static_cast<const void*>(x.kh.data()) : x.k.data();
  a.v = c.f16 ? static_cast<const void*>(x.vh.data()) : x.v.data();
  a.kv_dtype = c.f16 ? DType::kF16 : DType::kF32;
  a.mask = mask.data();
  a.out = out.data();
  a.t = T;
  a.hq = c.hq;
  a.hkv = c.hkv;
  a.s = S;
  a.d = c.D;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.D)));
  a.softcap = c.cap;
  return a;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i]))) << "elem " << i;
}

// Scans `rows`' mask, checks the path it chose, runs attention on `threads` and compares with the reference.
void run_rows(const std::vector<RowView>& rows, int64_t S, const Case& c, int threads, bool per_row) {
  const int64_t T = static_cast<int64_t>(rows.size());
  SCOPED_TRACE("T=" + std::to_string(T) + " S=" + std::to_string(S) + " g=" + std::to_string(c.hq / c.hkv) +
               " D=" + std::to_string(c.D) + (c.f16 ? " f16" : " f32") + " threads=" + std::to_string(threads) +
               " isa=" + std::string(isa_name(active_isa())));
  std::vector<float> mask = mask_of(rows, S);
  Data x = make_data(T, S, c, static_cast<uint32_t>(T * 131 + S + c.D));
  const std::vector<float> want = reference(x, mask, T, S, c);
  LiveSlots live(T, S);
  scan_live_slots(mask.data(), live);
  ThreadPool pool(threads);
  AttentionScratch scratch(pool.size(), c.hq / c.hkv, S, c.D, c.D);
  std::vector<float> out(x.q.size(), 99.0f);
  const AttentionArgs a = args_of(x, mask, out, 0, T, S, c);
  ASSERT_EQ(walks_own_slots(a, live, scratch), per_row);
  attention(a, live, scratch, &pool);
  expect_near(out, want);
}

class CpuFastRowAttention : public IsaTest {};

// T decode rows of T sequences in a pool of T × 128 slots; lengths 64..103 but the last row's, which sees a
// single slot; a finite bias on each sequence's second slot; every group size 1..8 with 2 or 1 kv heads;
// each T and each group size with f32 and f16 caches, D = 64 (the register-blocked kernels) and 40 (the
// generic loop).
TEST_P(CpuFastRowAttention, DecodeRowsOfDifferentSequencesMatchReference) {
  for (int64_t T : {2, 4, 8, 16})
    for (int64_t g = 1; g <= 8; ++g) {
      std::vector<int64_t> lengths;
      for (int64_t r = 0; r < T; ++r) lengths.push_back(r == T - 1 ? 1 : 64 + (r * 37 + g) % 40);
      const int64_t hkv = g <= 4 ? 2 : 1;
      const bool f16 = (g + T / 2) % 2 == 1;
      run_rows(decode_rows(lengths, 128), T * 128, {g * hkv, hkv, g % 2 == 0 ? 64 : 40, f16},
               1 + static_cast<int>(g % 2), true);
    }
}

// Sliding-window rows (each sees the last 8 slots of its sequence) next to a row that sees its whole
// sequence; and softcap on the per-row path.
TEST_P(CpuFastRowAttention, SlidingWindowRowsAndSoftcapMatchReference) {
  for (bool f16 : {false, true}) {
    auto rows = decode_rows({30, 50, 9, 64, 3, 40, 20, 33}, 64, 8);
    rows[3] = {3 * 64, 3 * 64 + 64, 3 * 64 + 10};  // a full-attention row among them
    run_rows(rows, 8 * 64, {6, 2, 64, f16}, 2, true);
    run_rows(rows, 8 * 64, {8, 1, 128, f16}, 1, true);
    run_rows(decode_rows({30, 50, 9, 64}, 128), 4 * 128, {6, 2, 64, f16, 2.5f}, 2, true);
  }
}

// A step of 5 real rows padded to 8: two pad rows copy row 0's mask, the last sees nothing (the reference's
// uniform average over all S slots).
TEST_P(CpuFastRowAttention, PadRowsAndAFullyHiddenRowMatchReference) {
  for (bool f16 : {false, true})
    for (int threads : {1, 2}) {
      auto rows = decode_rows({17, 40, 1, 63, 25}, 64);
      rows.push_back(rows[0]);
      rows.push_back(rows[0]);
      rows.push_back({0, 0, -1});
      run_rows(rows, 5 * 64, {9, 3, 64, f16}, threads, true);
      run_rows(rows, 5 * 64, {4, 4, 32, f16}, threads, true);
    }
}

// Prefill rows of two sequences in one step: each sequence's rows are causal over its own prefix, the
// other's slots hidden.
TEST_P(CpuFastRowAttention, PrefillRowsOfTwoSequencesMatchReference) {
  std::vector<RowView> rows;
  for (int64_t r = 0; r < 8; ++r) rows.push_back({0, 100 + r + 1, 5});
  for (int64_t r = 0; r < 8; ++r) rows.push_back({256, 256 + 40 + r + 1, 300});
  for (bool f16 : {false, true}) {
    run_rows(rows, 512, {9, 3, 64, f16}, 2, true);
    run_rows(rows, 512, {14, 2, 64, f16}, 1, true);
  }
}

// Few (row, kv head) units on 2 threads: each row's own list is split into ranges (one row sees 700
// slots, another 90, so its ranges are short, a third nothing) and merged exactly.
TEST_P(CpuFastRowAttention, SplitOverEachRowsOwnSlotRangesMatchesReference) {
  for (bool f16 : {false, true}) {
    run_rows(decode_rows({700, 90}, 1024), 2048, {4, 1, 64, f16}, 2, true);
    run_rows(decode_rows({90, 700}, 1024), 2048, {8, 1, 128, f16}, 2, true);
    run_rows(decode_rows({700, 90}, 1024), 2048, {4, 1, 64, f16, 3.0f}, 2, true);
    auto hidden = decode_rows({700, 90, 1}, 1024);
    hidden[2] = {0, 0, -1};
    run_rows(hidden, 3072, {2, 1, 40, f16}, 2, true);
  }
}

// Rows that share most of what they see keep the union and its blocked kernels (above kRowInvariantRows
// rows, where the path is chosen): a causal chunk of one sequence, a row that sees nothing next to it,
// every row seeing the same slots.
TEST_P(CpuFastRowAttention, RowsOfOneSequenceKeepTheUnionPath) {
  std::vector<RowView> causal;
  for (int64_t r = 0; r < 32; ++r) causal.push_back({0, r + 1, 3});
  std::vector<RowView> later = causal;
  for (auto& v : later) v.end += 200;
  later[5] = {0, 0, -1};
  for (bool f16 : {false, true}) {
    run_rows(causal, 256, {9, 3, 64, f16}, 2, false);
    run_rows(later, 256, {14, 2, 64, f16}, 2, false);
    run_rows(std::vector<RowView>(20, RowView{10, 90, 20}), 128, {8, 2, 32, f16}, 1, false);
  }
}

// Attention of rows `rows` (queries x.q from row q0 on) through attention(), as the backend runs a step.
std::vector<float> attend(Data& x, const std::vector<RowView>& rows, int64_t q0, int64_t S, const Case& c,
                          ThreadPool& pool) {
  const int64_t T = static_cast<int64_t>(rows.size());
  std::vector<float> mask = mask_of(rows, S);
  LiveSlots live(T, S);
  scan_live_slots(mask.data(), live);
  AttentionScratch scratch(pool.size(), c.hq / c.hkv, S, c.D, c.D, T);
  std::vector<float> out(static_cast<size_t>(T * c.hq * c.D), 99.0f);
  const AttentionArgs a = args_of(x, mask, out, q0, T, S, c);
  attention(a, live, scratch, &pool);
  return out;
}

// A row of an R-row step computes, bit for bit, what decode (the row alone, on one thread) computes:
// R = 2, 3, 4, 8, 16 causal rows of one sequence (draft tokens being verified) and R = 24 (a prefill chunk,
// a sample of its rows) after 40 or 700 cached slots (700: three segments, split over the threads on 2),
// and decode rows of different sequences; Qwen2.5-0.5B's heads (14/2, D = 64), SmolLM2's (9/3),
// stories260K's (8/4, D = 8) and one query head per kv head at D = 128, f32 and f16 caches, 1 and 2
// threads. On AVX-512 the causal rows of one sequence go through the kernels together (rows_together up to
// 16 rows, rows_in_segments above), the other cases row by row. Greedy speculative decoding is
// token-identical to plain decoding, and a prompt's rows the same in any chunks, only if this holds
// (docs/determinism.md).
TEST_P(CpuFastRowAttention, EveryRowIsWhatDecodeGivesIt) {
  const int64_t S = 1024;
  for (const Case& c : {Case{14, 2, 64, false}, Case{9, 3, 64, true}, Case{14, 2, 64, true}, Case{4, 4, 128, true}, Case{8, 4, 8, false},
                        Case{8, 4, 8, true}})
    for (int threads : {1, 2})
      for (int64_t prefix : {40, 700})
        for (int64_t R : {2, 3, 4, 8, 16, 24}) {
          ThreadPool pool(threads), one(1);
          std::vector<RowView> rows;
          for (int64_t r = 0; r < R; ++r) rows.push_back({0, prefix + r + 1, 1});
          if (prefix == 40 && R >= 4 && R <= 16) rows = decode_rows(std::vector<int64_t>(static_cast<size_t>(R), 50), S / R);
          SCOPED_TRACE("R=" + std::to_string(R) + " prefix=" + std::to_string(prefix) + " hq=" + std::to_string(c.hq) +
                       (c.f16 ? " f16" : " f32") + " threads=" + std::to_string(threads) +
                       " isa=" + std::string(isa_name(active_isa())));
          Data x = make_data(R, S, c, static_cast<uint32_t>(R * 7 + prefix));
          const std::vector<float> step = attend(x, rows, 0, S, c, pool);
          const int64_t per_row = c.hq * c.D;
          for (int64_t r = 0; r < R; ++r) {
            if (R > kRowInvariantRows && r % 7 != 0 && r != R - 1) continue;  // a sample of a chunk's rows
            const std::vector<float> alone = attend(x, {rows[static_cast<size_t>(r)]}, r, S, c, one);
            ASSERT_EQ(0, std::memcmp(alone.data(), step.data() + r * per_row, static_cast<size_t>(per_row) * sizeof(float)))
                << "row " << r;
          }
        }
}

// The scan itself: every row's list and the union, exactly, with slots in the last partial 64-slot word.
TEST_P(CpuFastRowAttention, ScanListsEachRowsSlotsAndTheirUnion) {
  const int64_t S = 133;
  std::vector<float> m(static_cast<size_t>(3 * S), kHidden);
  for (int64_t j : {0, 63, 64, 130}) m[0 * S + j] = 0.0f;
  for (int64_t j : {5, 64, 132}) m[1 * S + j] = -2.0f;
  // row 2 sees nothing
  LiveSlots live(3, S);
  scan_live_slots(m.data(), live);
  ASSERT_EQ(live.row_n[0], 4);
  ASSERT_EQ(live.row_n[1], 3);
  ASSERT_EQ(live.row_n[2], 0);
  EXPECT_EQ(std::vector<int32_t>(live.row_slots.begin(), live.row_slots.begin() + 4), (std::vector<int32_t>{0, 63, 64, 130}));
  EXPECT_EQ(std::vector<int32_t>(live.row_slots.begin() + S, live.row_slots.begin() + S + 3), (std::vector<int32_t>{5, 64, 132}));
  ASSERT_EQ(live.n, 6);
  EXPECT_EQ(std::vector<int32_t>(live.slots.begin(), live.slots.begin() + 6), (std::vector<int32_t>{0, 5, 63, 64, 130, 132}));
  EXPECT_EQ(live.row_end, (std::vector<int64_t>{5, 6, 0}));  // union positions of slots 130 and 132, plus one
  EXPECT_EQ(live.seen, 7);

  // A later step on the same lists: nothing left over from the first.
  std::vector<float> m2(static_cast<size_t>(3 * S), kHidden);
  for (int64_t r = 0; r < 3; ++r) m2[r * S + 70] = 0.0f;
  scan_live_slots(m2.data(), live);
  ASSERT_EQ(live.n, 1);
  EXPECT_EQ(live.slots[0], 70);
  EXPECT_EQ(live.row_n, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(live.row_end, (std::vector<int64_t>{1, 1, 1}));

  std::vector<float> none(static_cast<size_t>(3 * S), kHidden);
  scan_live_slots(none.data(), live);
  EXPECT_EQ(live.n, 0);
  EXPECT_EQ(live.seen, 0);
  EXPECT_EQ(live.row_end, (std::vector<int64_t>{0, 0, 0}));

  LiveSlots one(1, S);  // decode: the union is the row's list
  scan_live_slots(m.data(), one);
  EXPECT_EQ(one.n, 4);
  EXPECT_EQ(one.seen, 4);
}

// Which path a step takes (SmolLM2 heads, 9/3, D = 64): rows of one sequence keep the union whatever their
// blocks' staircase wastes (a causal chunk from position 0 or later, a sliding window wider than the step);
// rows of different sequences, or sharing a prompt prefix but each with its own tail, walk their own lists.
TEST_P(CpuFastRowAttention, OwnListsOnlyForRowsOfDifferentSequences) {
  auto picks_own = [](const std::vector<float>& m, int64_t T, int64_t S) {
    LiveSlots live(T, S);
    scan_live_slots(m.data(), live);
    AttentionArgs a;
    a.t = T;
    a.hq = 9;
    a.hkv = 3;
    a.s = S;
    a.d = 64;
    return walks_own_slots(a, live, AttentionScratch(1, 3, S, 64, 64));
  };
  std::vector<RowView> first_chunk, later_chunk, window;
  for (int64_t r = 0; r < 16; ++r) {
    first_chunk.push_back({0, r + 1});
    later_chunk.push_back({0, 300 + r + 1});
    window.push_back({r, r + 64});
  }
  EXPECT_FALSE(picks_own(mask_of(first_chunk, 64), 16, 64));
  EXPECT_FALSE(picks_own(mask_of(later_chunk, 512), 16, 512));
  EXPECT_FALSE(picks_own(mask_of(window, 128), 16, 128));
  EXPECT_TRUE(picks_own(mask_of(decode_rows({100, 100, 100, 100, 100, 100, 100, 100}, 128), 1024), 8, 1024));
  EXPECT_TRUE(picks_own(mask_of(decode_rows({4000, 100, 100, 100, 100, 100, 100, 100}, 4096), 8 * 4096), 8, 8 * 4096));
  // 8 rows sharing slots [0, 1000) (a common prompt), each with its own 100 after it.
  std::vector<float> pm = mask_of(std::vector<RowView>(8, RowView{0, 1000}), 2000);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t j = 1000 + 100 * r; j < 1100 + 100 * r; ++j) pm[r * 2000 + j] = 0.0f;
  EXPECT_TRUE(picks_own(pm, 8, 2000));
  // A single row: the union is its list.
  EXPECT_FALSE(picks_own(mask_of(decode_rows({100}, 128), 128), 1, 128));
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastRowAttention, all_isas(), isa_test_name);

// Through the backend: two attention nodes share one mask (scanned once per execute), and one compiled
// delegate runs a packed step of 8 sequences and then a causal chunk, each against the reference kernel.
TEST(CpuFastBackendRowAttention, PackedStepThenCausalChunkMatchReference) {
  const int64_t T = 8, S = 8 * 64;
  const Case c{6, 2, 64, true};
  Subgraph sg;
  const TensorType qt{DType::kF32, {1, T, c.hq, c.D}}, kvt{DType::kF16, {1, c.hkv, S, c.D}};
  sg.inputs = {{"q", qt, IORole::kInput, ""},
               {"k", kvt, IORole::kInput, ""},
               {"v", kvt, IORole::kInput, ""},
               {"mask", {DType::kF32, {1, 1, T, S}}, IORole::kInput, ""}};
  const Case capped{6, 2, 64, true, 4.0f};
  sg.nodes = {{"attention", {"q", "k", "v", "mask"}, {"a"}, attrs_of(c)},
              {"attention", {"q", "k", "v", "mask"}, {"b"}, attrs_of(capped)}};
  sg.outputs = {{"a", qt, IORole::kOutput, ""}, {"b", qt, IORole::kOutput, ""}};
  CpuFastBackend be(2);
  auto del = be.compile(sg);
  ASSERT_TRUE(del.ok()) << del.error().to_string();
  std::vector<RowView> causal;
  for (int64_t r = 0; r < T; ++r) causal.push_back({0, 300 + r + 1, 7});
  for (const auto& rows : {decode_rows({1, 20, 64, 33, 7, 50, 12, 40}, 64), causal}) {
    std::vector<float> mask = mask_of(rows, S);
    Data x = make_data(T, S, c, 11);
    std::vector<float> a(x.q.size()), b(x.q.size());
    const std::vector<TensorView> in = kernel_inputs(x, mask, T, S, c);
    const std::vector<TensorView> out = {TensorView(a.data(), DType::kF32, qt.shape), TensorView(b.data(), DType::kF32, qt.shape)};
    const Status st = (*del)->execute(in, out);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    expect_near(a, reference(x, mask, T, S, c));
    expect_near(b, reference(x, mask, T, S, capped));
  }
}

}  // namespace
}  // namespace hfs::cpu_fast
