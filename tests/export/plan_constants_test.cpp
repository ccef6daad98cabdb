// Constant names in export plans: methods name their constants, so one name must mean one content, both
// where the plan is built from a ModelSpec (weights) and where a plan is written (every planned constant).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "export/hf_config.h"
#include "export/model_spec.h"
#include "export/plan_assembly.h"
#include "hfstatic/export.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/safetensors.h"
#include "support/checkpoint_writer.h"

namespace hfs {
namespace {

const TensorType kF24{DType::kF32, {2, 4}};

// A lazily produced [2, 4] f32 constant filled with `value`, identified by `key`.
PlannedConstant filled(const std::string& name, const std::string& key, float value) {
  PlannedConstant c;
  c.name = name;
  c.type = kF24;
  c.content_key = key;
  c.produce = [value](std::span<std::byte> dst) -> Status {
    for (size_t i = 0; i + sizeof(float) <= dst.size(); i += sizeof(float)) std::memcpy(dst.data() + i, &value, sizeof(float));
    return Ok{};
  };
  return c;
}

// y = x + <table>: one method reading the constant by name.
MethodDef add_table(const std::string& name) {
  MethodDef m;
  m.name = name;
  m.inputs = {{"x", kF24, IORole::kInput, ""}};
  m.nodes = {{"add", {"x", "table"}, {"y"}, {}}};
  m.outputs = {{"y", kF24, IORole::kOutput, ""}};
  return m;
}

class PlanConstantsTest : public ::testing::Test {
 protected:
  std::string dir = testing::temp_dir("plan_constants");
  std::string out = dir + "/out.hfs";
  void TearDown() override { std::filesystem::remove_all(dir); }
};

TEST_F(PlanConstantsTest, OneNameWithTwoContentsIsRefusedBeforeWriting) {
  // Two methods, each meant to read its own "table": by name alone neither can be told which one it gets
  // (the writer used to store the second as "table.1" and point both methods at it).
  ExportPlan plan;
  plan.constants.push_back(filled("table", "ones", 1.0f));
  plan.constants.push_back(filled("table", "twos", 2.0f));
  plan.methods.push_back(add_table("prefill"));
  plan.methods.push_back(add_table("decode"));
  Status st = write_export_plan(std::move(plan), out, /*progress=*/false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  const std::string& m = st.error().message();
  EXPECT_NE(m.find("constant 'table'"), std::string::npos) << m;
  EXPECT_NE(m.find("'ones'"), std::string::npos) << m;
  EXPECT_NE(m.find("'twos'"), std::string::npos) << m;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(PlanConstantsTest, OneNameWithTwoTypesIsRefused) {
  ExportPlan plan;
  plan.constants.push_back(filled("table", "same", 1.0f));
  plan.constants.push_back(filled("table", "same", 1.0f));
  plan.constants.back().type = {DType::kF32, {4, 2}};
  Status st = check_constant_names(plan.constants);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("f32[4, 2]"), std::string::npos) << st.error().message();
}

TEST_F(PlanConstantsTest, OneNameWithOneContentIsStoredOnce) {
  ExportPlan plan;
  plan.constants.push_back(filled("table", "ones", 1.0f));
  plan.constants.push_back(filled("table", "ones", 1.0f));
  plan.methods.push_back(add_table("prefill"));
  plan.methods.push_back(add_table("decode"));
  ASSERT_TRUE(write_export_plan(std::move(plan), out, /*progress=*/false));
  auto p = Program::load(out);
  ASSERT_TRUE(p) << p.error().to_string();
  ASSERT_EQ((*p)->constants().size(), 1u);
  auto v = (*p)->constant("table");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->data<float>()[7], 1.0f);
  EXPECT_EQ((*p)->method("decode")->nodes[0].inputs[1], "table");
}

// A tiny untied llama checkpoint and its ModelSpec, for plans built from a hand-edited spec.
class SpecConstantsTest : public PlanConstantsTest {
 protected:
  void SetUp() override {
    testing::CheckpointWriter w(dir);
    w.config = {{"model_type", "llama"}, {"hidden_size", 16}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"num_key_value_heads", 2}, {"intermediate_size", 24}, {"vocab_size", 32},
                {"max_position_embeddings", 64}, {"tie_word_embeddings", false}, {"bos_token_id", 1},
                {"eos_token_id", 2}};
    testing::write_tiny_model(w);
    w.write();
    auto c = read_hf_config(dir);
    ASSERT_TRUE(c) << c.error().to_string();
    cfg = std::move(*c);
    auto k = Checkpoint::open(dir);
    ASSERT_TRUE(k) << k.error().to_string();
    ckpt = *k;
    auto s = find_arch("llama")(cfg, *ckpt);
    ASSERT_TRUE(s) << s.error().to_string();
    spec = std::move(*s);
  }
  Error assemble_error() {
    auto p = assemble_plan(spec, cfg, ckpt, {});
    EXPECT_FALSE(p.ok());
    return p.ok() ? make_error(ErrorCode::kOk, "") : p.error();
  }
  HfConfig cfg;
  std::shared_ptr<const Checkpoint> ckpt;
  ModelSpec spec;
};

TEST_F(SpecConstantsTest, TheUneditedSpecPlans) {
  auto p = assemble_plan(spec, cfg, ckpt, {});
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_TRUE(check_constant_names(p->constants));
}

TEST_F(SpecConstantsTest, TwoTensorsUnderOneNameAreAnError) {
  // Layer 1's q_proj named like layer 0's: every method would have read layer 0's weights for both.
  spec.layers[1].q.name = spec.layers[0].q.name;
  Error e = assemble_error();
  EXPECT_EQ(e.code(), ErrorCode::kInternal);
  EXPECT_NE(e.message().find("constant 'layers.0.self_attn.q_proj.weight'"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("'model.layers.0.self_attn.q_proj.weight'"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("'model.layers.1.self_attn.q_proj.weight'"), std::string::npos) << e.message();
}

TEST_F(SpecConstantsTest, AnLmHeadNamedLikeTheEmbeddingMustBeTheEmbedding) {
  // Named like the embedding but read from lm_head.weight: the head used to be dropped silently and the
  // logits computed with the embedding table.
  spec.lm_head.name = spec.embed.name;
  Error e = assemble_error();
  EXPECT_EQ(e.code(), ErrorCode::kInternal);
  EXPECT_NE(e.message().find("'lm_head.weight'"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace hfs
