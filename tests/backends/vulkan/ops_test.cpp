// Each vulkan shader against the reference kernel (cpu_ref's hfs::run_reference) on random inputs,
// including the awkward shapes: odd K and D, one row and many rows (T = 1 and T = C), slot counts that
// are not a multiple of the attention tile, partial rotary, masked and fully masked rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/vulkan/backend.h"
#include "core/half.h"
#include "core/quant.h"
#include "backends/vulkan/context.h"
#include "op_harness.h"

namespace hfs::vulkan::test {
namespace {

Attrs attrs(std::initializer_list<std::pair<const std::string, Value>> kv) { return Attrs(kv); }

class VulkanOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = vulkan_backend().release(); }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  // Runs `node` both ways and expects every output within atol + rtol·|ref|.
  void expect_match(const NodeDef& node, const std::vector<OpOperand>& operands, double atol = 1e-5,
                    double rtol = 1e-5, bool host_io = false) {
    ASSERT_NE(backend_, nullptr);
    OpRun ref = run_ref(node, operands);
    ASSERT_TRUE(ref.status.ok()) << ref.status.error().to_string();
    OpRun got = run_vulkan(*backend_, node, operands, host_io);
    ASSERT_TRUE(got.status.ok()) << got.status.error().to_string();
    ASSERT_EQ(got.outputs.size(), ref.outputs.size());
    for (size_t j = 0; j < ref.outputs.size(); ++j)
      EXPECT_LE(worst_ratio(got.outputs[j], ref.outputs[j], atol, rtol), 1.0) << node.op << " output " << j;
  }
  static Backend* backend_;
};
Backend* VulkanOps::backend_ = nullptr;

TEST_F(VulkanOps, Elementwise) {
  const int64_t n = 1001;  // not a multiple of the workgroup
  auto a = f32_operand("a", {1, 7, 143}, random_floats(n, 1, -6, 6));
  auto b = f32_operand("b", {1, 7, 143}, random_floats(n, 2, -6, 6));
  expect_match({"add", {"a", "b"}, {"y"}, {}}, {a, b}, 0, 0);
  expect_match({"mul", {"a", "b"}, {"y"}, {}}, {a, b}, 0, 0);
  expect_match({"silu", {"a"}, {"y"}, {}}, {a}, 1e-6, 1e-5);
  expect_match({"scale", {"a"}, {"y"}, attrs({{"value", Value(0.37)}})}, {a}, 0, 0);
  expect_match({"softcap", {"a"}, {"y"}, attrs({{"cap", Value(3.0)}})}, {a}, 1e-6, 1e-5);
  expect_match({"gelu_tanh", {"a"}, {"y"}, {}}, {a}, 1e-6, 1e-5);
}

TEST_F(VulkanOps, RmsNormOddWidth) {
  for (bool unit : {false, true}) {
    auto x = f32_operand("x", {1, 5, 37}, random_floats(5 * 37, 3, -3, 3));
    auto w = f32_operand("w", {37}, random_floats(37, 4), true);
    Attrs a = attrs({{"eps", Value(1e-5)}});
    if (unit) a["unit_offset"] = Value(true);
    expect_match({"rms_norm", {"x", "w"}, {"y"}, a}, {x, w}, 1e-6, 1e-5);
  }
}

TEST_F(VulkanOps, LinearGemvAndTiledShapes) {
  // (rows M, K, N): one row, a few rows (GEMV), many rows not a multiple of the 32-row tile (tiled).
  const int64_t shapes[][3] = {{1, 37, 45}, {3, 64, 17}, {4, 1, 9}, {5, 37, 45}, {33, 70, 65}, {64, 16, 32}};
  uint32_t seed = 10;
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    auto x = f32_operand("x", {1, m, k}, random_floats(static_cast<size_t>(m * k), seed++));
    auto w = f32_operand("w", {n, k}, random_floats(static_cast<size_t>(n * k), seed++), true);
    auto b = f32_operand("b", {n}, random_floats(static_cast<size_t>(n), seed++), true);
    SCOPED_TRACE("M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
    expect_match({"linear", {"x", "w"}, {"y"}, {}}, {x, w}, 1e-5, 1e-5);
    expect_match({"linear", {"x", "w", "b"}, {"y"}, {}}, {x, w, b}, 1e-5, 1e-5);
  }
}

TEST_F(VulkanOps, LinearWeightFormats) {
  // f16/bf16/i8 rows of odd length start mid-word; q4_0 needs K % 32 == 0. 3 rows (GEMV) and 37 (tiled).
  for (DType dt : {DType::kF16, DType::kBF16, DType::kI8, DType::kQ4_0}) {
    for (int64_t m : {int64_t{3}, int64_t{37}}) {
      const int64_t k = dt == DType::kQ4_0 ? 64 : 37, n = 23;
      std::vector<OpOperand> ops = {f32_operand("x", {1, m, k}, random_floats(static_cast<size_t>(m * k), 90))};
      for (OpOperand& o : stored_weight(dt, n, k, 91)) ops.push_back(std::move(o));
      NodeDef node{"linear", {"x", "w"}, {"y"}, {}};
      if (dt == DType::kI8) {
        node.inputs = {"x", "w", "b", "w.scale"};
        ops.insert(ops.begin() + 2, f32_operand("b", {n}, random_floats(static_cast<size_t>(n), 92), true));
      }
      SCOPED_TRACE(std::string(dtype_name(dt)) + " M=" + std::to_string(m));
      expect_match(node, ops, 1e-5, 1e-5);
    }
  }
}

TEST_F(VulkanOps, EmbeddingTableFormats) {
  for (DType dt : {DType::kF16, DType::kBF16, DType::kI8}) {
    std::vector<OpOperand> ops = stored_weight(dt, 20, 13, 93);
    ops[0].name = "table";
    ops.insert(ops.begin() + 1, i32_operand("ids", {1, 4}, {19, 0, 5, 5}));
    NodeDef node{"embedding", {"table", "ids"}, {"y"}, {}};
    if (dt == DType::kI8) node.inputs.push_back("w.scale");
    SCOPED_TRACE(std::string(dtype_name(dt)));
    expect_match(node, ops, 0, 0);
  }
}

TEST_F(VulkanOps, EmbeddingAndGather) {
  auto table = f32_operand("table", {20, 13}, random_floats(260, 20), true);
  auto ids = i32_operand("ids", {1, 5}, {0, 19, 7, 7, 3});
  expect_match({"embedding", {"table", "ids"}, {"y"}, {}}, {table, ids}, 0, 0);
  auto x = f32_operand("x", {1, 6, 11}, random_floats(66, 21));
  auto idx = i32_operand("idx", {2}, {5, 0});
  expect_match({"gather", {"x", "idx"}, {"y"}, attrs({{"axis", Value(1)}})}, {x, idx}, 0, 0);
  expect_match({"gather", {"x", "idx"}, {"y"}, attrs({{"axis", Value(-1)}})}, {x, idx}, 0, 0);
}

TEST_F(VulkanOps, SliceAndTranspose) {
  auto x = f32_operand("x", {2, 5, 3, 7}, random_floats(210, 30));
  expect_match({"slice", {"x"}, {"y"}, attrs({{"axis", Value(1)}, {"start", Value(1)}, {"end", Value(4)}})}, {x}, 0, 0);
  expect_match({"slice", {"x"}, {"y"}, attrs({{"axis", Value(-1)}, {"start", Value(2)}, {"end", Value(7)}})}, {x}, 0, 0);
  expect_match({"transpose", {"x"}, {"y"}, attrs({{"perm", Value::int_array({0, 2, 1, 3})}})}, {x}, 0, 0);
  expect_match({"transpose", {"x"}, {"y"}, attrs({{"perm", Value::int_array({3, 1, 0, 2})}})}, {x}, 0, 0);
  auto x2 = f32_operand("x", {9, 4}, random_floats(36, 31));
  expect_match({"transpose", {"x"}, {"y"}, attrs({{"perm", Value::int_array({1, 0})}})}, {x2}, 0, 0);
}

TEST_F(VulkanOps, RopeFullAndPartialLargePositions) {
  // T = 3 rows, H = 3 heads, D = 10: full rotary (inv_freq of 5) and partial (of 3, dims 6..9 pass).
  for (int64_t half : {5, 3}) {
    auto x = f32_operand("x", {1, 3, 3, 10}, random_floats(90, 40, -2, 2));
    auto pos = i32_operand("pos", {1, 3}, {0, 17, 4095});
    std::vector<float> inv(static_cast<size_t>(half));
    for (int64_t j = 0; j < half; ++j) inv[static_cast<size_t>(j)] = std::pow(10000.0f, -2.0f * j / 10.0f);
    auto f = f32_operand("inv", {half}, inv, true);
    expect_match({"rope", {"x", "pos", "inv"}, {"y"}, {}}, {x, pos, f}, 2e-6, 1e-5);
    expect_match({"rope", {"x", "pos", "inv"}, {"y"}, attrs({{"attention_scaling", Value(1.25)}})}, {x, pos, f}, 2e-6, 1e-5);
  }
}

TEST_F(VulkanOps, KvCacheWriteSkipsNegativeSlotsAndLaterRowWins) {
  const int64_t hkv = 2, s = 9, d = 5, t = 4;
  auto cache = f32_operand("cache", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 50));
  auto rows = f32_operand("rows", {1, t, hkv, d}, random_floats(static_cast<size_t>(t * hkv * d), 51));
  auto slots = i32_operand("slots", {t}, {3, -1, 8, 3});
  expect_match({"kv_cache_write", {"cache", "rows", "slots"}, {"cache_out"}, {}}, {cache, rows, slots}, 0, 0);
}

// An f16 operand of `shape` holding `values` rounded to f16 (the reference reads and writes it too).
OpOperand f16_operand(const std::string& name, Shape shape, const std::vector<float>& values) {
  OpOperand o{name, {DType::kF16, shape}, std::vector<uint8_t>(values.size() * 2), false};
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = f32_to_f16(values[i]);
    std::memcpy(o.bytes.data() + 2 * i, &h, 2);
  }
  return o;
}

TEST_F(VulkanOps, F16CachesWriteRoundToNearestEvenAndAttentionReadsThem) {
  const int64_t hkv = 2, s = 67, d = 6, t = 3, hq = 4;
  // Rows with values at f16 ties and in the subnormal range, so the rounding itself is compared.
  std::vector<float> rows = random_floats(static_cast<size_t>(t * hkv * d), 100, -3, 3);
  rows[0] = 1.0f + 1.0f / 2048.0f;  // a tie: rounds to even (1.0)
  rows[1] = 3e-6f;                  // an f16 subnormal
  rows[2] = 70000.0f;               // overflows to inf
  auto cache = f16_operand("cache", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 101));
  auto r = f32_operand("rows", {1, t, hkv, d}, rows);
  auto slots = i32_operand("slots", {t}, {66, -1, 5});
  expect_match({"kv_cache_write", {"cache", "rows", "slots"}, {"c"}, {}}, {cache, r, slots}, 0, 0);

  auto q = f32_operand("q", {1, t, hq, d}, random_floats(static_cast<size_t>(t * hq * d), 102, -2, 2));
  auto k = f16_operand("k", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 103, -2, 2));
  auto v = f16_operand("v", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 104, -2, 2));
  std::vector<float> mask(static_cast<size_t>(t * s), 0.0f);
  for (int64_t j = 50; j < s; ++j) mask[static_cast<size_t>(j)] = -1e30f;
  auto m = f32_operand("mask", {1, 1, t, s}, mask);
  expect_match({"attention", {"q", "k", "v", "mask"}, {"y"}, attrs({{"scale", Value(0.4)}})}, {q, k, v, m}, 2e-6, 2e-5);
}

TEST_F(VulkanOps, AttentionDecodeAndChunkWithMasks) {
  const int64_t hq = 4, hkv = 2, s = 70, d = 24;  // S crosses the 64-slot tile; GQA group of 2
  for (int64_t t : {int64_t{1}, int64_t{5}}) {
    for (double softcap : {0.0, 5.0}) {
      auto q = f32_operand("q", {1, t, hq, d}, random_floats(static_cast<size_t>(t * hq * d), 60, -2, 2));
      auto k = f32_operand("k", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 61, -2, 2));
      auto v = f32_operand("v", {1, hkv, s, d}, random_floats(static_cast<size_t>(hkv * s * d), 62, -2, 2));
      std::vector<float> mask(static_cast<size_t>(t * s), 0.0f);
      for (int64_t r = 0; r < t; ++r)
        for (int64_t j = 0; j < s; ++j)
          if (j > 40 + r || (r == 2)) mask[static_cast<size_t>(r * s + j)] = -1e30f;  // row 2 fully hidden
      auto m = f32_operand("mask", {1, 1, t, s}, mask);
      Attrs a = attrs({{"scale", Value(1.0 / std::sqrt(24.0))}});
      if (softcap > 0) a["softcap"] = Value(softcap);
      SCOPED_TRACE("T=" + std::to_string(t) + " softcap=" + std::to_string(softcap));
      expect_match({"attention", {"q", "k", "v", "mask"}, {"y"}, a}, {q, k, v, m}, 2e-6, 2e-5);
    }
  }
}

TEST_F(VulkanOps, HostMemoryIsStagedThroughShadowBuffers) {
  auto x = f32_operand("x", {1, 3, 37}, random_floats(111, 70));
  auto w = f32_operand("w", {11, 37}, random_floats(407, 71), true);
  expect_match({"linear", {"x", "w"}, {"y"}, {}}, {x, w}, 1e-5, 1e-5, /*host_io=*/true);
  auto cache = f32_operand("cache", {1, 1, 4, 3}, random_floats(12, 72));
  auto rows = f32_operand("rows", {1, 1, 1, 3}, random_floats(3, 73));
  auto slots = i32_operand("slots", {1}, {2});
  expect_match({"kv_cache_write", {"cache", "rows", "slots"}, {"c"}, {}}, {cache, rows, slots}, 0, 0, true);
}

TEST_F(VulkanOps, OutOfRangeIdsAndSlotsAreErrorsBeforeAnythingRuns) {
  ASSERT_NE(backend_, nullptr);
  auto table = f32_operand("table", {20, 13}, random_floats(260, 80), true);
  OpRun r = run_vulkan(*backend_, {"embedding", {"table", "ids"}, {"y"}, {}}, {table, i32_operand("ids", {1, 2}, {3, 20})});
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.error().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(r.status.error().message().find("ids[1] = 20"), std::string::npos) << r.status.error().to_string();

  auto cache = f32_operand("cache", {1, 1, 4, 3}, random_floats(12, 81));
  auto rows = f32_operand("rows", {1, 1, 1, 3}, random_floats(3, 82));
  r = run_vulkan(*backend_, {"kv_cache_write", {"cache", "rows", "slots"}, {"c"}, {}},
                 {cache, rows, i32_operand("slots", {1}, {4})});
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.error().code(), ErrorCode::kOutOfRange);
  // The cache is unchanged: the step never ran.
  std::vector<float> before(12);
  std::memcpy(before.data(), cache.bytes.data(), 48);
  EXPECT_EQ(r.outputs.at(0), before);
}

TEST(VulkanBackend, ClaimsWhatItHasKernelsForAndNamesTheRest) {
  TensorType f32m{DType::kF32, {4, 8}}, f16w{DType::kF16, {4, 8}}, x{DType::kF32, {1, 2, 8}}, i64w{DType::kI64, {4, 8}};
  auto b = vulkan_backend();
  ASSERT_NE(b, nullptr);
  const TensorType* f32_types[] = {&x, &f32m};
  const TensorType* f16_types[] = {&x, &f16w};
  const TensorType* i64_types[] = {&x, &i64w};
  NodeDef lin{"linear", {"x", "w"}, {"y"}, {}};
  EXPECT_TRUE(b->supports(lin, f32_types));
  EXPECT_TRUE(b->supports(lin, f16_types));
  EXPECT_FALSE(b->supports(lin, i64_types));
  NodeDef unknown{"no_such_op", {"x"}, {"y"}, {}};
  EXPECT_FALSE(b->supports(unknown, f32_types));
}

TEST(VulkanBackend, SettingsAreChecked) {
  Value s = Value::object();
  s.set("device", Value(99));
  auto r = make_vulkan_backend(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("device 99 does not exist"), std::string::npos) << r.error().to_string();
  Value typo = Value::object();
  typo.set("devcie", Value(0));
  r = make_vulkan_backend(typo);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown setting 'devcie'"), std::string::npos);
  // `threads` (what CPU backends size their pool by; a draft program's runner asks every backend for one)
  // is accepted when it is a thread count.
  Value threads = Value::object();
  threads.set("threads", Value(1));
  EXPECT_TRUE(make_vulkan_backend(threads).ok());
  threads.set("threads", Value(0));
  r = make_vulkan_backend(threads);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'threads' must be an integer >= 1, got 0"), std::string::npos)
      << r.error().to_string();
}

// With HFS_VULKAN_VALIDATION set (the CTest registration sets it), every message of the Khronos
// validation layer fails the run.
class ValidationClean : public ::testing::Environment {
 public:
  void TearDown() override {
    EXPECT_EQ(validation_message_count(), 0u) << "the Vulkan validation layer reported messages (see stderr)";
  }
};
const auto* const kValidation = ::testing::AddGlobalTestEnvironment(new ValidationClean);

}  // namespace
}  // namespace hfs::vulkan::test
