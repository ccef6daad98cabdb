// Which slices the Vulkan delegate binds as views of their source (src/backends/vulkan/slice_view.h):
// contiguous ones not pinned by a subgraph output or an in-place update. The values they produce are
// checked end to end by fuse_linear_pass_test.cpp (decode's fused projections are views).
#include <gtest/gtest.h>

#include "backends/vulkan/slice_view.h"
#include "hfstatic/ext/method.h"

namespace hfs::vulkan {
namespace {

NodeDef slice(const std::string& x, const std::string& y, int64_t axis, int64_t start, int64_t end) {
  Attrs a;
  a["axis"] = Value(axis);
  a["start"] = Value(start);
  a["end"] = Value(end);
  return NodeDef{"slice", {x}, {y}, std::move(a)};
}

TEST(VulkanSliceViews, ContiguousUnpinnedSlicesOnly) {
  auto store = owned_constants();
  Subgraph sg;
  sg.constants = store.get();
  sg.inputs = {{"row", {DType::kF32, {1, 1, 12}}, IORole::kInput, ""},
               {"rows", {DType::kF32, {1, 2, 12}}, IORole::kInput, ""}};
  sg.nodes = {{"silu", {"row"}, {"a"}, {}},     slice("a", "a0", -1, 0, 4),  // [1, 1, 4] of a [1, 1, 12]: bytes 0..16
              slice("a", "a1", -1, 4, 12),                                   // bytes 16..48
              slice("a", "out", -1, 4, 8),  // a subgraph output: copied into the caller's buffer
              {"silu", {"rows"}, {"b"}, {}},    slice("b", "b0", -1, 0, 4),  // two rows: not one range
              {"add", {"a0", "a0"}, {"c"}, {}}, {"add", {"a1", "a1"}, {"d"}, {}}, {"add", {"b0", "b0"}, {"e"}, {}}};
  sg.outputs = {{"out", {DType::kF32, {1, 1, 4}}, IORole::kOutput, ""},
                {"c", {DType::kF32, {1, 1, 4}}, IORole::kOutput, ""},
                {"d", {DType::kF32, {1, 1, 8}}, IORole::kOutput, ""},
                {"e", {DType::kF32, {1, 2, 4}}, IORole::kOutput, ""}};
  auto types = detail::infer_value_types(sg.inputs, sg.nodes, *store, "test");
  ASSERT_TRUE(types.ok()) << types.error().to_string();
  const SliceViews v = slice_views(sg, *types, [](const std::string& s) { return s; });
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.at("a0"), (std::pair<std::string, uint64_t>{"a", 0}));
  EXPECT_EQ(v.at("a1"), (std::pair<std::string, uint64_t>{"a", 16}));
}

}  // namespace
}  // namespace hfs::vulkan
