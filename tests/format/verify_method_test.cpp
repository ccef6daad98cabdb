// verify_method on in-memory MethodDefs: alias tracking through views, value types reported, and rules
// that are easier to state directly than through a corrupted file.
#include <gtest/gtest.h>

#include "hfstatic/program.h"
#include "support/program_fixtures.h"

namespace hfs {
namespace {

const TensorType kF24{DType::kF32, {2, 4}};
const TensorType kF8{DType::kF32, {8}};

MethodDef state_method() {
  MethodDef m;
  m.name = "step";
  m.inputs = {{"x", kF8, IORole::kInput, ""}, {"cache", kF24, IORole::kState, ""}};
  return m;
}

Attrs view_as(std::vector<int64_t> dims) { return {{"shape", Value::int_array(dims)}}; }

TEST(VerifyMethod, ReportsTheTypeOfEveryValue) {
  test::register_test_ops();
  std::vector<ConstantInfo> constants{{"w", kF24, 0, 32}};
  ValueTypes types;
  Status st = verify_method(test::tiny_decode(), constants, &types);
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(types.at("x"), (TensorType{DType::kF32, {1, 8}}));
  EXPECT_EQ(types.at("xv"), kF24);
  EXPECT_EQ(types.at("w"), kF24);
  EXPECT_EQ(types.at("h"), kF24);
  EXPECT_EQ(types.at("cache_out"), kF24);
}

TEST(VerifyMethod, StateUpdatedThroughAViewIsAValidAliasChain) {
  test::register_test_ops();
  // cache [2,4] -> view [8] -> in-place write -> view back [2,4]: all in cache's buffer.
  MethodDef m = state_method();
  m.nodes = {{"test.view", {"cache"}, {"flat"}, view_as({8})},
             {"test.inplace_write", {"flat", "x"}, {"flat2"}, {}},
             {"test.view", {"flat2"}, {"cache_out"}, view_as({2, 4})}};
  m.outputs = {{"cache_out", kF24, IORole::kState, "cache"}};
  Status st = verify_method(m, {});
  EXPECT_TRUE(st) << st.error().to_string();
}

TEST(VerifyMethod, ViewOfAnUpdatedBufferIsStale) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.nodes = {{"test.view", {"cache"}, {"flat"}, view_as({8})},
             {"test.inplace_write", {"cache", "cache"}, {"cache_out"}, {}},
             {"test.add", {"flat", "x"}, {"y"}, {}}};  // flat shows the buffer before node 1 wrote it
  m.outputs = {{"y", kF8, IORole::kOutput, ""}, {"cache_out", kF24, IORole::kState, "cache"}};
  Status st = verify_method(m, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kUseAfterInPlace);
  EXPECT_NE(st.error().message().find("'flat'"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("node 1 (test.inplace_write)"), std::string::npos);
}

TEST(VerifyMethod, PlainOutputOverwrittenLaterIsRejected) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.nodes = {{"test.view", {"cache"}, {"snapshot"}, view_as({8})},
             {"test.inplace_write", {"cache", "cache"}, {"cache_out"}, {}}};
  m.outputs = {{"snapshot", kF8, IORole::kOutput, ""}, {"cache_out", kF24, IORole::kState, "cache"}};
  Status st = verify_method(m, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kUseAfterInPlace);
  EXPECT_NE(st.error().message().find("'snapshot'"), std::string::npos);
}

TEST(VerifyMethod, TwoStateOutputsForOneInput) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.nodes = {{"test.inplace_write", {"cache", "cache"}, {"c1"}, {}}};
  m.outputs = {{"c1", kF24, IORole::kState, "cache"}, {"cache", kF24, IORole::kState, "cache"}};
  Status st = verify_method(m, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kBadAlias);
  EXPECT_NE(st.error().message().find("already returned by output 0"), std::string::npos) << st.error().message();
}

TEST(VerifyMethod, UntouchedStateMayBeReturnedAsItself) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.outputs = {{"cache", kF24, IORole::kState, "cache"}};
  EXPECT_TRUE(verify_method(m, {}));
}

TEST(VerifyMethod, MultiOutputNodes) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.nodes = {{"test.split", {"x"}, {"lo", "hi"}, {}}, {"test.add", {"lo", "hi"}, {"s"}, {}}};
  m.outputs = {{"s", {DType::kF32, {4}}, IORole::kOutput, ""}};
  ValueTypes types;
  ASSERT_TRUE(verify_method(m, {}, &types));
  EXPECT_EQ(types.at("hi"), (TensorType{DType::kF32, {4}}));
}

TEST(VerifyMethod, LongerCycleIsReportedInOrder) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.nodes = {{"test.add", {"x", "c"}, {"a"}, {}},
             {"test.add", {"a", "x"}, {"b"}, {}},
             {"test.add", {"b", "x"}, {"c"}, {}}};
  Status st = verify_method(m, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kCycle);
  EXPECT_NE(st.error().message().find("node 0 (test.add) -> node 1 (test.add) -> node 2 (test.add) -> node 0"),
            std::string::npos)
      << st.error().message();
}

TEST(VerifyMethod, InvalidDeclaredTypes) {
  test::register_test_ops();
  MethodDef m = state_method();
  m.inputs[0].type = {DType::kQ4_0, {3, 10}};  // 30 values are not whole 32-element blocks
  Status st = verify_method(m, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(st.error().message().find("input 0 'x'"), std::string::npos);
  MethodDef unnamed;
  EXPECT_EQ(verify_method(unnamed, {}).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace hfs
