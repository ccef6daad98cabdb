// The storage plan cpu_ref and vulkan share (runtime/subgraph_storage.h), on hand-built subgraphs of the
// test ops (test_support.h): where each value lives, hand-computed scratch offsets, and the errors.
#include "runtime/subgraph_storage.h"

#include <gtest/gtest.h>

#include "hfstatic/ext/method.h"
#include "runtime/test_support.h"

namespace hfs {
namespace {

using Kind = detail::ValueStorage::Kind;

const TensorType kF32x4{DType::kF32, Shape{4}};  // 16 bytes

Subgraph subgraph(std::vector<NodeDef> nodes, std::vector<std::string> outputs, const ConstantStore& constants) {
  Subgraph sg;
  sg.nodes = std::move(nodes);
  sg.inputs = {IOSpec{"x", kF32x4, IORole::kInput, ""}};
  for (const std::string& o : outputs) sg.outputs.push_back(IOSpec{o, kF32x4, IORole::kOutput, ""});
  sg.constants = &constants;
  return sg;
}

Result<detail::SubgraphStorage> plan(const Subgraph& sg) {
  HFS_ASSIGN_OR_RETURN(detail::TypeMap types, detail::infer_value_types(sg.inputs, sg.nodes, *sg.constants, "test"));
  return detail::plan_subgraph_storage(sg, types, "test");
}

TEST(SubgraphStorage, RootsAndScratchLifetimes) {
  ASSERT_TRUE(testing_rt::kTestRuntimeRegistered);
  auto constants = owned_constants();
  const float w[4] = {1, 2, 3, 4};
  ASSERT_TRUE(constants->add("w", kF32x4, std::as_bytes(std::span(w))).ok());
  // a = x + w; b = 2a; c = -b; v = view(c); y = v + x. a dies at node 1, b at node 2: c reuses a's bytes.
  Attrs view_shape;
  view_shape["shape"] = Value(std::vector<Value>{Value(4)});
  const Subgraph sg = subgraph({NodeDef{"test_rt.add", {"x", "w"}, {"a"}, {}},
                                NodeDef{"test_rt.scale2", {"a"}, {"b"}, {}},
                                NodeDef{"test_rt.neg", {"b"}, {"c"}, {}},
                                NodeDef{"test_rt.view", {"c"}, {"v"}, view_shape},
                                NodeDef{"test_rt.add", {"v", "x"}, {"y"}, {}}},
                               {"y"}, *constants);
  auto p = plan(sg);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->at("x").kind, Kind::kInput);
  EXPECT_EQ(p->at("y").kind, Kind::kOutput);
  EXPECT_EQ(p->at("y").index, 0u);
  ASSERT_EQ(p->at("w").kind, Kind::kConstant);
  EXPECT_EQ(p->at("w").constant, constants->find("w"));
  EXPECT_EQ(p->root_of("v"), "c");  // a view lives in its source
  for (const char* v : {"a", "b", "c", "v"}) EXPECT_EQ(p->at(v).kind, Kind::kScratch) << v;
  // a [0, 1], b [1, 2], c [2, 4] (through its view): two 16-byte slots at 64-byte aligned offsets (0 and
  // 64), a and c sharing one.
  EXPECT_EQ(p->scratch_bytes, 64u + 16u);
  EXPECT_EQ(p->at("a").offset, p->at("c").offset);
  EXPECT_NE(p->at("a").offset, p->at("b").offset);
}

TEST(SubgraphStorage, AnOutputOfAnAliasGroupGivesItsRootTheOutput) {
  auto constants = owned_constants();
  Attrs view_shape;
  view_shape["shape"] = Value(std::vector<Value>{Value(4)});
  const Subgraph sg = subgraph({NodeDef{"test_rt.scale2", {"x"}, {"a"}, {}},
                                NodeDef{"test_rt.view", {"a"}, {"v"}, view_shape}},
                               {"v"}, *constants);
  auto p = plan(sg);
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->at("a").kind, Kind::kOutput);  // computed straight into the output's buffer
  EXPECT_EQ(p->scratch_bytes, 0u);
}

TEST(SubgraphStorage, UndefinedOperandAndInPlaceConstantAreErrors) {
  auto constants = owned_constants();
  const float w[4] = {};
  ASSERT_TRUE(constants->add("w", kF32x4, std::as_bytes(std::span(w))).ok());
  Subgraph undefined = subgraph({NodeDef{"test_rt.add", {"x", "nowhere"}, {"y"}, {}}}, {"y"}, *constants);
  detail::TypeMap types{{"x", kF32x4}, {"nowhere", kF32x4}, {"y", kF32x4}};
  auto r = detail::plan_subgraph_storage(undefined, types, "test");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUndefinedValue);
  EXPECT_NE(r.error().message().find("operand 'nowhere' has no storage"), std::string::npos) << r.error().to_string();

  // (Were w2 a subgraph output, w's root would be that output's buffer rather than the constant.)
  const Subgraph in_place = subgraph({NodeDef{"test_rt.inplace_add", {"w", "x"}, {"w2"}, {}},
                                      NodeDef{"test_rt.scale2", {"w2"}, {"y"}, {}}},
                                     {"y"}, *constants);
  auto q = plan(in_place);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code(), ErrorCode::kBadAlias);
  EXPECT_NE(q.error().message().find("updates constant 'w' in place"), std::string::npos) << q.error().to_string();
}

}  // namespace
}  // namespace hfs
