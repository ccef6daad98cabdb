// Every built-in op listed in hfstatic/ext/ops.h is registered with its operand counts, attributes, aliasing,
// a rule and a reference kernel.
#include <gtest/gtest.h>

#include "hfstatic/ext/ops.h"

namespace hfs {
namespace {

struct Expected {
  const char* name;
  int min_inputs, max_inputs;
  int alias_input;
  bool in_place;
};

TEST(OpRegistry, AllBuiltInOpsAreRegistered) {
  const Expected ops[] = {
      {"embedding", 2, 3, -1, false}, {"rms_norm", 2, 2, -1, false},  {"linear", 2, 4, -1, false},
      {"add", 2, 2, -1, false},       {"mul", 2, 2, -1, false},       {"silu", 1, 1, -1, false},
      {"gelu_tanh", 1, 1, -1, false}, {"softcap", 1, 1, -1, false},   {"scale", 1, 1, -1, false},
      {"rope", 3, 3, -1, false},      {"kv_cache_write", 3, 4, 0, true}, {"attention", 4, 6, -1, false},
      {"reshape", 1, 1, 0, false},    {"transpose", 1, 1, -1, false}, {"slice", 1, 1, -1, false},
      {"gather", 2, 2, -1, false},    {"moe", 5, 8, -1, false},       {"sigmoid_gate", 2, 2, -1, false},
      {"kv_scale_write", 3, 3, 0, true},
  };
  for (const Expected& e : ops) {
    const OpSchema* s = find_op(e.name);
    ASSERT_NE(s, nullptr) << e.name;
    EXPECT_EQ(s->min_inputs, e.min_inputs) << e.name;
    EXPECT_EQ(s->max_inputs, e.max_inputs) << e.name;
    EXPECT_EQ(s->num_outputs, 1) << e.name;
    EXPECT_EQ(s->alias_input, e.alias_input) << e.name;
    EXPECT_EQ(s->in_place, e.in_place) << e.name;
    EXPECT_NE(s->infer, nullptr) << e.name;
    EXPECT_NE(s->reference, nullptr) << e.name;
  }
}

TEST(OpRegistry, RequiredAttributesAreDeclared) {
  auto required = [](const char* op, const char* attr) {
    for (const AttrSpec& a : find_op(op)->attrs)
      if (a.name == attr) return a.required;
    ADD_FAILURE() << op << " has no attribute " << attr;
    return false;
  };
  EXPECT_TRUE(required("rms_norm", "eps"));
  EXPECT_FALSE(required("rms_norm", "unit_offset"));
  EXPECT_TRUE(required("softcap", "cap"));
  EXPECT_TRUE(required("scale", "value"));
  EXPECT_TRUE(required("moe", "top_k"));
  EXPECT_FALSE(required("moe", "norm_topk_prob"));
  EXPECT_FALSE(required("rope", "attention_scaling"));
  EXPECT_TRUE(required("attention", "scale"));
  EXPECT_FALSE(required("attention", "softcap"));
  EXPECT_TRUE(required("reshape", "shape"));
  EXPECT_TRUE(required("transpose", "perm"));
  EXPECT_TRUE(required("slice", "axis"));
  EXPECT_TRUE(required("slice", "start"));
  EXPECT_TRUE(required("slice", "end"));
  EXPECT_TRUE(required("gather", "axis"));
}

}  // namespace
}  // namespace hfs
