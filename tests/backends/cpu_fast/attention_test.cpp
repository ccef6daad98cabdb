#include "backends/cpu_fast/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu_fast/cpu_features.h"
#include "isa_fixture.h"
#include "backends/cpu_fast/half.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/ext/ops.h"
#include "support/random_floats.h"

namespace hfs::cpu_fast {
namespace {

constexpr float kHidden = -1e30f;

// Naive reference over ALL S slots in double, exactly the op's definition.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask, int64_t T, int64_t hq, int64_t hkv, int64_t S, int64_t D,
                              double scale, double cap) {
  std::vector<double> out(static_cast<size_t>(T * hq * D), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kh = h / (hq / hkv);
      std::vector<double> s(static_cast<size_t>(S));
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < D; ++e) dot += double(q[(t * hq + h) * D + e]) * k[(kh * S + j) * D + e];
        dot *= scale;
        if (cap > 0) dot = std::tanh(dot / cap) * cap;
        // f32 addition as in the op: -1e30 absorbs the score.
        s[j] = static_cast<float>(static_cast<float>(dot) + mask[t * S + j]);
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < D; ++e) out[(t * hq + h) * D + e] += s[j] / sum * v[(kh * S + j) * D + e];
    }
  return out;
}

struct Case {
  int64_t T, hq, hkv, S, D;
  bool f16;
  float cap;
  std::vector<float> mask;
};

void run_case(const Case& c, int threads) {
  SCOPED_TRACE("T=" + std::to_string(c.T) + " S=" + std::to_string(c.S) + " D=" + std::to_string(c.D) +
               (c.f16 ? " f16" : " f32") + " isa=" + std::string(isa_name(active_isa())));
  std::mt19937 rng(static_cast<uint32_t>(c.S + c.D));
  hfs::test::Normal<float> nd(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(c.T * c.hq * c.D)), k(static_cast<size_t>(c.hkv * c.S * c.D)), v(k.size());
  for (auto& x : q) x = nd(rng);
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  std::vector<uint16_t> kh(k.size()), vh(v.size());
  if (c.f16) {
    for (size_t i = 0; i < k.size(); ++i) {
      kh[i] = f32_to_f16(k[i]);
      k[i] = f16_to_f32(kh[i]);
      vh[i] = f32_to_f16(v[i]);
      v[i] = f16_to_f32(vh[i]);
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  auto ref = reference(q, k, v, c.mask, c.T, c.hq, c.hkv, c.S, c.D, scale, c.cap);
  std::vector<int32_t> slots(static_cast<size_t>(c.S));
  const int64_t n = live_slots(c.mask.data(), c.T, c.S, slots.data());
  ThreadPool pool(threads);
  AttentionScratch scratch(pool.size(), c.hq / c.hkv, c.S, c.D, c.D);  // block_d: the prefill kernel may run
  std::vector<float> out(q.size(), 99.0f);
  AttentionArgs a;
  a.q = q.data();
  a.k = c.f16 ? static_cast<const void*>(kh.data()) : k.data();
  a.v = c.f16 ? static_cast<const void*>(vh.data()) : v.data();
  a.kv_dtype = c.f16 ? DType::kF16 : DType::kF32;
  a.mask = c.mask.data();
  a.out = out.data();
  a.t = c.T;
  a.hq = c.hq;
  a.hkv = c.hkv;
  a.s = c.S;
  a.d = c.D;
  a.scale = scale;
  a.softcap = c.cap;
  attention(a, slots.data(), n, scratch, &pool);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 2e-5 * (1 + std::fabs(ref[i]))) << "elem " << i;
}

std::vector<float> causal_mask(int64_t T, int64_t S, int64_t start, int64_t bias_slot = 2) {
  // Row t sees slots [0, start + t]; the rest hidden. Slot bias_slot (none if < 0) also carries a finite
  // bias (-1.5).
  std::vector<float> m(static_cast<size_t>(T * S), kHidden);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s <= start + t && s < S; ++s) m[t * S + s] = s == bias_slot ? -1.5f : 0.0f;
  return m;
}

class CpuFastAttention : public IsaTest {};

TEST_P(CpuFastAttention, MatchesReferenceDefinition) {
  for (bool f16 : {false, true}) {
    run_case({5, 6, 2, 32, 40, f16, 0.0f, causal_mask(5, 32, 3)}, 2);       // prefill chunk, D tail
    run_case({1, 4, 4, 64, 64, f16, 0.0f, causal_mask(1, 64, 20)}, 1);      // decode, MHA
    run_case({3, 4, 1, 48, 16, f16, 2.0f, causal_mask(3, 48, 7)}, 2);       // softcap, MQA
    run_case({32, 9, 3, 300, 64, f16, 0.0f, causal_mask(32, 300, 200)}, 2);  // SmolLM2 prefill chunk
    run_case({7, 14, 2, 90, 128, f16, 0.0f, causal_mask(7, 90, 60)}, 2);      // g = 7, D = 128
    run_case({2, 8, 2, 45, 32, f16, 0.0f, causal_mask(2, 45, 30)}, 1);        // D = 32, slot tail
    // Decode with 2 and 3 heads per kv head (AVX2 converts each f16 row once for all of them), live
    // counts that leave 1-3 rows after the 4-row score blocks, D = 32/64/128.
    run_case({1, 4, 2, 80, 64, f16, 0.0f, causal_mask(1, 80, 61)}, 1);        // g = 2, 62 live
    run_case({1, 6, 3, 80, 64, f16, 0.0f, causal_mask(1, 80, 62)}, 1);        // g = 3, 63 live
    run_case({1, 4, 2, 140, 128, f16, 0.0f, causal_mask(1, 140, 130)}, 1);    // g = 2, D = 128, 131 live
    run_case({1, 3, 1, 50, 32, f16, 0.0f, causal_mask(1, 50, 36)}, 1);        // g = 3, D = 32, 37 live
  }
}

// Few (row, kv-head) units on 2 threads: the live slots are split into ranges whose partial softmaxes are
// merged; D = 64/128/256 take the register-blocked kernels, D = 40 the generic loop.
TEST_P(CpuFastAttention, DecodeSplitOverSlotRangesMatchesReference) {
  for (bool f16 : {false, true}) {
    run_case({1, 9, 3, 700, 64, f16, 0.0f, causal_mask(1, 700, 650)}, 2);   // SmolLM2 heads, 3 units
    run_case({1, 14, 2, 512, 64, f16, 0.0f, causal_mask(1, 512, 480)}, 2);  // Qwen2-0.5B heads, g = 7
    run_case({1, 8, 1, 400, 128, f16, 0.0f, causal_mask(1, 400, 399)}, 2);
    run_case({1, 2, 1, 300, 256, f16, 0.0f, causal_mask(1, 300, 290)}, 2);
    run_case({1, 4, 2, 333, 40, f16, 0.0f, causal_mask(1, 333, 300)}, 2);
    run_case({1, 9, 3, 700, 64, f16, 3.0f, causal_mask(1, 700, 650)}, 2);   // softcap
    // More than 8 heads per kv head (two passes of scores and sums), sums split over column chunks.
    run_case({1, 12, 1, 200, 64, f16, 0.0f, causal_mask(1, 200, 170)}, 2);
    run_case({1, 10, 1, 150, 128, f16, 0.0f, causal_mask(1, 150, 149)}, 2);
    run_case({1, 10, 2, 90, 256, f16, 0.0f, causal_mask(1, 90, 77)}, 2);
  }
  // Two rows, one kv head: row 0 sees only the first 10 slots, so most ranges hold nothing it can see;
  // a scattered ring-buffer-like mask with hidden holes inside the live range.
  run_case({2, 4, 1, 600, 64, false, 0.0f, [] {
              auto m = causal_mask(2, 600, 9);
              for (int64_t s = 11; s < 600; ++s) m[1 * 600 + s] = (s % 7 == 3) ? kHidden : (s % 5 == 0 ? -0.75f : 0.0f);
              return m;
            }()},
           2);
}

// Prefill chunks on AVX-512 run blocks of 32/g rows × the g heads of a kv head along the lanes of two
// vectors: every group size from 1 (32 rows per block, a partial last block) to 16 (two rows), each head dim the
// kernel has a width for, causal trimming of a block's slots, scattered non-contiguous live slots seen
// by different rows, and the paths it leaves to the per-row kernel (g > 16, D not a multiple of 16).
TEST_P(CpuFastAttention, PrefillBlocksOfRowsAndHeadsMatchReference) {
  for (bool f16 : {false, true}) {
    run_case({37, 4, 4, 80, 64, f16, 0.0f, causal_mask(37, 80, 20)}, 2);    // g = 1: 32 rows, tail of 5
    run_case({9, 16, 1, 70, 32, f16, 0.0f, causal_mask(9, 70, 40)}, 1);     // g = 16: two rows per block
    run_case({11, 10, 2, 50, 80, f16, 0.0f, causal_mask(11, 50, 30)}, 2);   // g = 5, D = 80
    run_case({6, 8, 2, 40, 256, f16, 0.0f, causal_mask(6, 40, 10)}, 2);     // g = 4, D = 256
    run_case({5, 6, 1, 30, 192, f16, 0.0f, causal_mask(5, 30, 20)}, 1);     // D = 192
    run_case({16, 9, 3, 40, 112, f16, 0.0f, causal_mask(16, 40, 0)}, 2);    // first chunk: rows see 1..16 slots
    run_case({4, 34, 2, 30, 64, f16, 0.0f, causal_mask(4, 30, 10)}, 2);     // g = 17: per-row kernel
  }
  // Ring-buffer-like mask: every row sees a different scattered subset (gathered mask, no contiguous run),
  // one row sees a single slot, one sees nothing.
  const int64_t T = 6, S = 90;
  std::vector<float> m(static_cast<size_t>(T * S), kHidden);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s)
      if ((s * 7 + t * 3) % 5 < 2 && t != 4) m[t * S + s] = (s % 4 == 1) ? -0.5f : 0.0f;
  for (int64_t s = 0; s < S; ++s) m[2 * S + s] = s == 77 ? 0.25f : kHidden;
  run_case({T, 6, 2, S, 64, true, 0.0f, m}, 2);
}

// The block kernel's shortcuts: slots every row sees with a mask of exactly 0 skip the mask gather (a bias
// late in that prefix, on one row only, or nowhere), and f16 V rows are widened in chunks of
// kAttnVChunkFloats / D slots (128 at D = 64, 32 at D = 256) shared by every pass of lanes; blocks of one
// vector of lanes (the tail) and of two.
TEST_P(CpuFastAttention, PrefillMaskPrefixAndWidenedVChunksMatchReference) {
  for (bool f16 : {false, true}) {
    run_case({32, 9, 3, 300, 64, f16, 0.0f, causal_mask(32, 300, 200, -1)}, 2);   // no bias: 2 V chunks
    run_case({32, 9, 3, 300, 64, f16, 0.0f, causal_mask(32, 300, 200, 150)}, 2);  // bias mid-prefix
    run_case({13, 14, 2, 400, 64, f16, 0.0f, causal_mask(13, 400, 380, 129)}, 2); // g = 7, 3 V chunks
    run_case({6, 8, 2, 100, 256, f16, 0.0f, causal_mask(6, 100, 90, 95)}, 1);     // 4 V chunks at D = 256
    auto m = causal_mask(20, 200, 150, -1);
    m[7 * 200 + 60] = 0.5f;  // one row's bias ends the shared clear prefix for its block only
    run_case({20, 6, 2, 200, 64, f16, 0.0f, m}, 2);
  }
}

TEST_P(CpuFastAttention, RowWithNothingVisibleAveragesAllSlots) {
  auto m = causal_mask(3, 24, 2);
  for (int64_t s = 0; s < 24; ++s) m[1 * 24 + s] = kHidden;  // row 1: padding row
  run_case({3, 2, 1, 24, 16, false, 0.0f, m}, 2);
}

TEST_P(CpuFastAttention, LiveSlotsSkipHiddenCacheEntries) {
  const int64_t S = 4096;
  auto m = causal_mask(1, S, 15);  // positions 0..15 of a 4096-slot cache
  std::vector<int32_t> slots(S);
  ASSERT_EQ(live_slots(m.data(), 1, S, slots.data()), 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(slots[i], i);
  // Ring-buffer style: scattered slots, several rows, a slot seen only by the last row.
  std::vector<float> m2(static_cast<size_t>(2 * 40), kHidden);
  m2[0 * 40 + 39] = 0.0f;
  m2[1 * 40 + 5] = 0.0f;
  m2[1 * 40 + 17] = -3.0f;
  ASSERT_EQ(live_slots(m2.data(), 2, 40, slots.data()), 3);
  EXPECT_EQ(slots[0], 5);
  EXPECT_EQ(slots[1], 17);
  EXPECT_EQ(slots[2], 39);
  run_case({1, 2, 1, S, 64, true, 0.0f, m}, 2);
}

// int8 caches (row x = scale · q, scales [Hkv, S]) at every ISA level, against the reference op's kernel
// (cpu_ref: the same int8 cache, its own loop) and the naive double definition over the dequantized rows;
// decode (split over slot ranges on 2 threads), prefill rows (the union and each row's own list), softcap,
// D with a tail, g = 1..7, a row that sees nothing.
void run_i8_case(int64_t T, int64_t hq, int64_t hkv, int64_t S, int64_t D, float cap, const std::vector<float>& mask,
                 int threads, bool rows_alone = false) {
  SCOPED_TRACE("int8 T=" + std::to_string(T) + " S=" + std::to_string(S) + " D=" + std::to_string(D) +
               " isa=" + std::string(isa_name(active_isa())));
  std::mt19937 rng(static_cast<uint32_t>(S * 7 + D));
  hfs::test::Normal<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> qd(-127, 127);
  hfs::test::Uniform<float> sd(0.002f, 0.03f);
  std::vector<float> q(static_cast<size_t>(T * hq * D)), ks(static_cast<size_t>(hkv * S)), vs(ks.size());
  std::vector<int8_t> k8(static_cast<size_t>(hkv * S * D)), v8(k8.size());
  for (auto& x : q) x = nd(rng);
  for (auto& x : k8) x = static_cast<int8_t>(qd(rng));
  for (auto& x : v8) x = static_cast<int8_t>(qd(rng));
  for (auto& x : ks) x = sd(rng) * 4;
  for (auto& x : vs) x = sd(rng);
  std::vector<float> k(k8.size()), v(v8.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = ks[i / static_cast<size_t>(D)] * k8[i];
    v[i] = vs[i / static_cast<size_t>(D)] * v8[i];
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto naive = reference(q, k, v, mask, T, hq, hkv, S, D, scale, cap);
  // cpu_ref's kernel on the int8 cache.
  std::vector<float> ref(q.size());
  NodeDef node{"attention", {}, {}, Attrs{{"scale", Value(static_cast<double>(scale))}}};
  if (cap > 0) node.attrs["softcap"] = Value(static_cast<double>(cap));
  const TensorView in[] = {TensorView(q.data(), DType::kF32, {1, T, hq, D}), TensorView(k8.data(), DType::kI8, {1, hkv, S, D}),
                           TensorView(v8.data(), DType::kI8, {1, hkv, S, D}),
                           TensorView(const_cast<float*>(mask.data()), DType::kF32, {1, 1, T, S}),
                           TensorView(ks.data(), DType::kF32, {1, hkv, S}), TensorView(vs.data(), DType::kF32, {1, hkv, S})};
  const TensorView out_ref[] = {TensorView(ref.data(), DType::kF32, {1, T, hq, D})};
  ASSERT_TRUE(run_reference(node, in, out_ref).ok());
  ThreadPool pool(threads);
  AttentionScratch scratch(pool.size(), hq / hkv, S, D, D, T);
  AttentionArgs a;
  a.q = q.data();
  a.k = k8.data();
  a.v = v8.data();
  a.kv_dtype = DType::kI8;
  a.k_scale = ks.data();
  a.v_scale = vs.data();
  a.mask = mask.data();
  a.t = T;
  a.hq = hq;
  a.hkv = hkv;
  a.s = S;
  a.d = D;
  a.scale = scale;
  a.softcap = cap;
  LiveSlots live(T, S);
  scan_live_slots(mask.data(), live);
  std::vector<float> own;
  for (RowPath path : {RowPath::kOwn, RowPath::kUnion}) {
    std::vector<float> out(q.size(), 99.0f);
    a.out = out.data();
    attention(a, live, scratch, &pool, path);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], ref[i], 2e-5 * (1 + std::fabs(ref[i]))) << "elem " << i << (path == RowPath::kOwn ? " own" : " union");
      ASSERT_NEAR(out[i], naive[i], 2e-5 * (1 + std::fabs(naive[i]))) << "elem " << i;
    }
    if (path == RowPath::kOwn) own = out;
  }
  if (!rows_alone || T == 1) return;
  // docs/determinism.md: each row's bits are those it gets as a decode step of its own (its query and
  // mask row alone, one thread), whatever rows share its step.
  AttentionScratch one(1, hq / hkv, S, D, D, 1);
  for (int64_t r = 0; r < T; ++r) {
    AttentionArgs b = a;
    std::vector<float> out(static_cast<size_t>(hq * D), 99.0f);
    b.q = q.data() + r * hq * D;
    b.mask = mask.data() + r * S;
    b.out = out.data();
    b.t = 1;
    LiveSlots lr(1, S);
    scan_live_slots(b.mask, lr);
    attention(b, lr, one, nullptr, RowPath::kChoose);
    ASSERT_EQ(std::memcmp(out.data(), own.data() + r * hq * D, out.size() * sizeof(float)), 0) << "row " << r;
  }
}

TEST_P(CpuFastAttention, Int8CacheMatchesTheReferenceKernel) {
  run_i8_case(1, 9, 3, 700, 64, 0.0f, causal_mask(1, 700, 650), 2);   // decode split over slot ranges
  run_i8_case(1, 14, 2, 300, 64, 0.0f, causal_mask(1, 300, 280), 1);  // g = 7
  run_i8_case(5, 6, 2, 32, 40, 0.0f, causal_mask(5, 32, 3), 2);       // prefill rows, D tail
  run_i8_case(20, 4, 4, 64, 32, 0.0f, causal_mask(20, 64, 30), 2);    // more rows than the row-invariant steps
  run_i8_case(3, 4, 1, 48, 16, 2.0f, causal_mask(3, 48, 7), 2);       // softcap, MQA
  std::vector<float> m = causal_mask(2, 40, 10);
  std::fill(m.begin() + 40, m.end(), kHidden);  // row 1 sees nothing: the uniform average of v
  run_i8_case(2, 2, 1, 40, 16, 0.0f, m, 1);
}

// The int8 scores and sums over blocks of 16 slots and every head of a group at once (the slots along the
// lanes on AVX-512; scales applied per slot in the kernels): GQA groups 1, 2 and 7, D 64 and 128, 1 to 20
// rows over live lengths that cross the 256-slot segments and end inside a 16-slot block, or a step's rows
// within one segment (scored together), every row's bits those it gets alone. About 40 ms per ISA.
TEST_P(CpuFastAttention, Int8BlocksOfSlotsAndHeadsMatchTheReference) {
  run_i8_case(1, 7, 1, 600, 128, 0.0f, causal_mask(1, 600, 530), 2);  // g = 7, three segments, split
  run_i8_case(1, 4, 2, 520, 64, 0.0f, causal_mask(1, 520, 300), 1);   // g = 2, two segments
  run_i8_case(2, 3, 3, 300, 128, 0.0f, causal_mask(2, 300, 256), 2, true);  // g = 1, rows across the boundary
  run_i8_case(7, 9, 3, 280, 64, 0.0f, causal_mask(7, 280, 250), 2, true);   // SmolLM2's g = 3, 7 rows
  run_i8_case(13, 14, 2, 300, 64, 0.0f, causal_mask(13, 300, 260), 2, true);  // g = 7, 13 rows
  run_i8_case(20, 4, 2, 290, 128, 0.0f, causal_mask(20, 290, 240), 2, true);  // g = 2, 20 rows (a chunk)
  run_i8_case(9, 9, 3, 256, 64, 0.0f, causal_mask(9, 256, 200), 2, true);      // rows of one segment together
  run_i8_case(16, 14, 2, 200, 128, 0.0f, causal_mask(16, 200, 150), 2, true);  // g = 7, 16 rows together
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuFastAttention, all_isas(), isa_test_name);

}  // namespace
}  // namespace hfs::cpu_fast
