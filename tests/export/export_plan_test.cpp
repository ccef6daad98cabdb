// Export plans: graph structure, I/O signature, metadata, sliding detection, RoPE tables and errors for
// every architecture, built from tiny checkpoints written by tests/support/checkpoint_writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sys/wait.h>

#include "export/convert.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/safetensors.h"
#include "support/checkpoint_writer.h"
#include "support/fixtures.h"
#include "support/require_fixture.h"

namespace hfs {
namespace {

using nlohmann::json;
using testing::CheckpointWriter;

json llama_config() {
  return {{"model_type", "llama"},       {"hidden_size", 16},   {"num_hidden_layers", 2},
          {"num_attention_heads", 4},    {"num_key_value_heads", 2}, {"intermediate_size", 24},
          {"vocab_size", 32},            {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},       {"rope_scaling", nullptr}, {"tie_word_embeddings", false},
          {"bos_token_id", 1},           {"eos_token_id", 2},     {"hidden_act", "silu"}};
}

json gemma2_config() {
  return {{"model_type", "gemma2"}, {"hidden_size", 16}, {"num_hidden_layers", 4}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 8}, {"intermediate_size", 24}, {"vocab_size", 32},
          {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
          {"query_pre_attn_scalar", 16}, {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0},
          {"sliding_window", 8}, {"hidden_activation", "gelu_pytorch_tanh"}, {"bos_token_id", 2},
          {"eos_token_id", 1}, {"pad_token_id", 0}};
}

json gemma3_text_config() {
  json c = gemma2_config();
  c["model_type"] = "gemma3_text";
  c["num_hidden_layers"] = 6;
  c["sliding_window_pattern"] = 3;
  c["rope_theta"] = 1000000.0;
  c["rope_local_base_freq"] = 10000.0;
  c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  c.erase("attn_logit_softcapping");
  c["final_logit_softcapping"] = nullptr;
  return c;
}

class ExportPlanTest : public ::testing::Test {
 protected:
  std::string dir = testing::temp_dir("export");
  CheckpointWriter w{dir};
  void TearDown() override { std::filesystem::remove_all(dir); }

  ExportPlan plan(const ExportOptions& opt = {}) {
    auto p = build_export_plan(dir, opt);
    EXPECT_TRUE(p.ok()) << p.error().to_string();
    return p.ok() ? std::move(*p) : ExportPlan{};
  }
  Error plan_error(const ExportOptions& opt = {}) {
    auto p = build_export_plan(dir, opt);
    EXPECT_FALSE(p.ok());
    return p.ok() ? make_error(ErrorCode::kOk, "") : p.error();
  }
  void write_model(const json& config, DType dtype = DType::kF32) {
    w.config = config;
    testing::write_tiny_model(w, dtype);
    w.write();
  }
};

const MethodDef& method(const ExportPlan& p, const std::string& name) {
  for (const auto& m : p.methods)
    if (m.name == name) return m;
  ADD_FAILURE() << "no method " << name;
  static MethodDef none;
  return none;
}

const NodeDef* producer(const MethodDef& m, const std::string& value) {
  for (const auto& n : m.nodes)
    if (!n.outputs.empty() && n.outputs[0] == value) return &n;
  return nullptr;
}

const PlannedConstant* constant(const ExportPlan& p, const std::string& name) {
  for (const auto& c : p.constants)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<float> produce_f32(const PlannedConstant& c) {
  std::vector<std::byte> buf(c.type.nbytes());
  EXPECT_TRUE(c.produce(buf).ok());
  std::vector<float> out(buf.size() / 4);
  std::memcpy(out.data(), buf.data(), buf.size());
  return out;
}

std::vector<std::string> ops(const MethodDef& m) {
  std::vector<std::string> out;
  for (const auto& n : m.nodes) out.push_back(n.op);
  return out;
}

std::vector<std::string> io_names(const std::vector<IOSpec>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.name);
  return out;
}

const IOSpec* io(const std::vector<IOSpec>& v, const std::string& name) {
  for (const auto& s : v)
    if (s.name == name) return &s;
  return nullptr;
}

int64_t meta_int(const ExportPlan& p, std::string_view key) {
  auto it = p.metadata.find(key);
  EXPECT_NE(it, p.metadata.end()) << key;
  return it == p.metadata.end() ? -999 : it->second.as_int();
}

std::vector<std::string> meta_strings(const ExportPlan& p, std::string_view key) {
  std::vector<std::string> out;
  auto it = p.metadata.find(key);
  if (it != p.metadata.end())
    for (const auto& v : it->second.as_array()) out.push_back(v.as_string());
  return out;
}

std::vector<int64_t> meta_ints(const ExportPlan& p, std::string_view key) {
  std::vector<int64_t> out;
  auto it = p.metadata.find(key);
  if (it != p.metadata.end())
    for (const auto& v : it->second.as_array()) out.push_back(v.as_int());
  return out;
}

// HF default inv_freq in double precision: an independent reference for the float32 tables.
std::vector<double> ref_inv_freq(double base, int dim, double factor = 1.0) {
  std::vector<double> out;
  for (int i = 0; i < dim; i += 2) out.push_back(1.0 / std::pow(base, static_cast<double>(i) / dim) / factor);
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i])) << "index " << i;
}

const std::vector<std::string> kLlamaLayerOps = {
    "rms_norm", "linear", "reshape", "linear", "reshape", "linear", "reshape", "rope", "rope", "kv_cache_write",
    "kv_cache_write", "attention", "reshape", "linear", "add", "rms_norm", "linear", "linear", "silu", "mul",
    "linear", "add"};

TEST_F(ExportPlanTest, LlamaGraphAndSignature) {
  write_model(llama_config());
  ExportOptions opt;
  opt.prefill_chunk = 4;
  ExportPlan p = plan(opt);
  ASSERT_EQ(p.methods.size(), 3u);  // prefill, decode and the default variant C/2
  for (auto [name, T] : {std::pair<std::string, int64_t>{"prefill", 4}, {"decode", 1}, {"prefill_2", 2}}) {
    const MethodDef& m = method(p, name);
    std::vector<std::string> want_ops = {"embedding"};
    for (int l = 0; l < 2; ++l) want_ops.insert(want_ops.end(), kLlamaLayerOps.begin(), kLlamaLayerOps.end());
    want_ops.insert(want_ops.end(), {"gather", "rms_norm", "linear"});
    EXPECT_EQ(ops(m), want_ops) << name;
    EXPECT_EQ(io_names(m.inputs),
              (std::vector<std::string>{"input_ids", "position_ids", "logits_index", "cache_slots_global", "attn_mask_global",
                                        "k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}));
    EXPECT_EQ(io(m.inputs, "input_ids")->type, (TensorType{DType::kI32, {1, T}}));
    EXPECT_EQ(io(m.inputs, "position_ids")->type, (TensorType{DType::kI32, {1, T}}));
    EXPECT_EQ(io(m.inputs, "logits_index")->type, (TensorType{DType::kI32, {1}}));
    EXPECT_EQ(io(m.inputs, "cache_slots_global")->type, (TensorType{DType::kI32, {T}}));
    EXPECT_EQ(io(m.inputs, "attn_mask_global")->type, (TensorType{DType::kF32, {1, 1, T, 64}}));
    EXPECT_EQ(io(m.inputs, "k_cache_1")->type, (TensorType{DType::kF32, {1, 2, 64, 4}}));
    EXPECT_EQ(io(m.inputs, "k_cache_1")->role, IORole::kState);
    EXPECT_EQ(io_names(m.outputs),
              (std::vector<std::string>{"logits", "k_cache_0_out", "v_cache_0_out", "k_cache_1_out", "v_cache_1_out"}));
    EXPECT_EQ(m.outputs[0].type, (TensorType{DType::kF32, {1, 1, 32}}));
    EXPECT_EQ(m.outputs[0].role, IORole::kOutput);
    EXPECT_EQ(m.outputs[3].alias_of, "k_cache_1");
    EXPECT_EQ(m.outputs[3].role, IORole::kState);
    // Write-first wiring of layer 1.
    const NodeDef* kw = producer(m, "k_cache_1_out");
    ASSERT_NE(kw, nullptr);
    EXPECT_EQ(kw->op, "kv_cache_write");
    EXPECT_EQ(kw->inputs, (std::vector<std::string>{"k_cache_1", "l1.k_rot", "cache_slots_global"}));
    const NodeDef* att = producer(m, "l1.attn");
    ASSERT_NE(att, nullptr);
    EXPECT_EQ(att->inputs, (std::vector<std::string>{"l1.q_rot", "k_cache_1_out", "v_cache_1_out", "attn_mask_global"}));
    EXPECT_DOUBLE_EQ(att->attrs.at("scale").as_float(), 0.5);  // head_dim 4
    EXPECT_EQ(att->attrs.count("softcap"), 0u);
    const NodeDef* q = producer(m, "l1.q");
    EXPECT_EQ(q->attrs.at("shape"), Value::int_array({1, T, 4, 4}));
    const NodeDef* rope = producer(m, "l1.q_rot");
    EXPECT_EQ(rope->inputs, (std::vector<std::string>{"l1.q", "position_ids", "rope.inv_freq"}));
    const NodeDef* norm = producer(m, "l0.attn_norm");
    EXPECT_EQ(norm->inputs, (std::vector<std::string>{"embed", "layers.0.input_layernorm.weight"}));
    EXPECT_NEAR(norm->attrs.at("eps").as_float(), 1e-5, 1e-12);
    EXPECT_EQ(norm->attrs.count("unit_offset"), 0u);
    const NodeDef* gather = producer(m, "last_hidden");
    EXPECT_EQ(gather->inputs, (std::vector<std::string>{"l1.out", "logits_index"}));
    EXPECT_EQ(gather->attrs.at("axis").as_int(), 1);
    const NodeDef* head = producer(m, "logits");
    EXPECT_EQ(head->inputs, (std::vector<std::string>{"final_norm", "lm_head.weight"}));
  }
  // Every constant a node names exists, once.
  std::map<std::string, int> seen;
  for (const auto& c : p.constants) ++seen[c.name];
  for (const auto& [n, count] : seen) EXPECT_EQ(count, 1) << n;
  for (const auto& m : p.methods)
    for (const auto& n : m.nodes)
      for (const auto& in : n.inputs)
        if (in.find("weight") != std::string::npos || in.rfind("rope.", 0) == 0) {
          EXPECT_TRUE(seen.count(in)) << in;
        }
}

TEST_F(ExportPlanTest, LlamaMetadata) {
  json c = llama_config();
  w.generation_config = {{"bos_token_id", 1}, {"eos_token_id", {2, 5}}};
  write_model(c);
  ExportPlan p = plan();
  EXPECT_EQ(p.metadata.at(std::string(keys::kContract)).as_string(), "hf_static");
  EXPECT_EQ(meta_int(p, keys::kContractVersion), 1);
  EXPECT_EQ(p.metadata.at(std::string(keys::kPrefillMethod)).as_string(), "prefill");
  EXPECT_EQ(p.metadata.at(std::string(keys::kDecodeMethod)).as_string(), "decode");
  EXPECT_EQ(meta_int(p, keys::kPrefillTokens), 64);  // default (and = the 64-token context)
  EXPECT_EQ(meta_int(p, keys::kDecodeTokens), 1);
  EXPECT_EQ(meta_int(p, keys::kContextLength), 64);  // min(max_position_embeddings, 4096)
  EXPECT_EQ(meta_int(p, keys::kNumLayers), 2);
  EXPECT_EQ(meta_int(p, keys::kNumKvHeads), 2);
  EXPECT_EQ(meta_int(p, keys::kHeadDim), 4);
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds), (std::vector<std::string>{"global", "global"}));
  EXPECT_EQ(meta_ints(p, keys::kLayerCacheLengths), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(meta_int(p, keys::kSlidingWindow), 0);
  EXPECT_EQ(p.metadata.at(std::string(keys::kCacheDType)).as_string(), "f32");
  EXPECT_EQ(p.metadata.at(std::string(keys::kCacheLayout)).as_string(), "bhsd");
  EXPECT_EQ(meta_int(p, keys::kVocabSize), 32);
  EXPECT_EQ(meta_int(p, keys::kBosTokenId), 1);
  EXPECT_EQ(meta_ints(p, keys::kEosTokenIds), (std::vector<int64_t>{2, 5}));  // generation_config wins
  EXPECT_EQ(meta_int(p, keys::kPadTokenId), 2);  // no pad: first eos
  EXPECT_EQ(p.metadata.at(std::string(keys::kLogitsMode)).as_string(), "last");
  EXPECT_EQ(p.metadata.at(std::string(keys::kGeneralArchitecture)).as_string(), "llama");
  EXPECT_EQ(p.metadata.at(std::string(keys::kGeneralWeights)).as_string(), "f32");
  EXPECT_EQ(p.metadata.at(std::string(keys::kGeneralSource)).as_string(), dir);

  ExportOptions small;
  small.context = 16;
  small.cache_dtype = DType::kF16;
  ExportPlan q = plan(small);
  EXPECT_EQ(meta_int(q, keys::kContextLength), 16);
  EXPECT_EQ(meta_int(q, keys::kPrefillTokens), 16);  // default chunk clamped to the context
  EXPECT_EQ(q.metadata.at(std::string(keys::kCacheDType)).as_string(), "f16");
  EXPECT_EQ(io(method(q, "decode").inputs, "k_cache_0")->type, (TensorType{DType::kF16, {1, 2, 16, 4}}));
  // Up to max_position_embeddings (64) as asked; beyond it an error saying so, never a silent cap.
  ExportOptions full;
  full.context = 64;
  EXPECT_EQ(meta_int(plan(full), keys::kContextLength), 64);
  ExportOptions big;
  big.context = 65;
  Error e = plan_error(big);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("context 65 exceeds the model's max_position_embeddings 64"), std::string::npos)
      << e.message();
  // A chunk above the default context says the context was the default.
  ExportOptions chunk;
  chunk.prefill_chunk = 128;
  e = plan_error(chunk);
  EXPECT_NE(e.message().find("prefill chunk 128 exceeds the context length 64 (the default context"), std::string::npos)
      << e.message();
}

TEST_F(ExportPlanTest, LogitsAll) {
  write_model(llama_config());
  ExportOptions opt;
  opt.prefill_chunk = 8;
  opt.logits_all = true;
  ExportPlan p = plan(opt);
  const MethodDef& m = method(p, "prefill");
  EXPECT_EQ(io(m.inputs, "logits_index"), nullptr);
  EXPECT_EQ(producer(m, "last_hidden"), nullptr);
  EXPECT_EQ(m.outputs[0].type, (TensorType{DType::kF32, {1, 8, 32}}));
  EXPECT_EQ(p.metadata.at(std::string(keys::kLogitsMode)).as_string(), "all");
}

// int8: every linear weight i8 with a per-row f32 scale as linear's 4th operand (bias slot left empty);
// int4: q4_0 where K is a multiple of 32. The embedding table is i8 in both modes and its gather takes the
// same per-row scale constant as operand 2.
TEST_F(ExportPlanTest, QuantizedWeights) {
  write_model(llama_config());
  for (WeightsMode mode : {WeightsMode::kInt8, WeightsMode::kInt4}) {
    ExportOptions opt;
    opt.weights = mode;
    std::vector<std::pair<std::string, double>> reported;
    opt.on_quantized = [&](const std::string& name, DType, double err) { reported.emplace_back(name, err); };
    ExportPlan p = plan(opt);
    const PlannedConstant* q = constant(p, "layers.0.self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    const int64_t K = q->type.shape[1];
    const DType want = mode == WeightsMode::kInt8 || K % 32 != 0 ? DType::kI8 : DType::kQ4_0;
    EXPECT_EQ(q->type.dtype, want);
    EXPECT_EQ(constant(p, "embed_tokens.weight")->type.dtype, DType::kI8);
    const NodeDef* emb = producer(method(p, "decode"), "embed");
    ASSERT_NE(emb, nullptr);
    ASSERT_EQ(emb->inputs.size(), 3u);
    EXPECT_EQ(emb->inputs[2], "embed_tokens.weight.scale");
    ASSERT_NE(constant(p, "embed_tokens.weight.scale"), nullptr);
    const NodeDef* lin = producer(method(p, "decode"), "l0.q_proj");
    ASSERT_NE(lin, nullptr);
    if (want == DType::kI8) {
      ASSERT_EQ(lin->inputs.size(), 4u);
      EXPECT_EQ(lin->inputs[2], "");
      EXPECT_EQ(lin->inputs[3], "layers.0.self_attn.q_proj.weight.scale");
      ASSERT_NE(constant(p, lin->inputs[3]), nullptr);
    } else {
      EXPECT_EQ(lin->inputs.size(), 2u);
    }
    // Producing the constant quantizes it and reports a small relative error.
    std::vector<std::byte> buf(q->type.nbytes());
    ASSERT_TRUE(q->produce(buf).ok());
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_GT(reported[0].second, 0.0);
    EXPECT_LT(reported[0].second, want == DType::kI8 ? 0.02 : 0.2);
  }
}

TEST_F(ExportPlanTest, LlamaTiedAndWeightValues) {
  json c = llama_config();
  c["tie_word_embeddings"] = true;
  w.config = c;
  testing::write_tiny_model(w);
  auto embed = w.add("model.embed_tokens.weight", DType::kF32, {32, 16});
  auto norm = w.add("model.layers.0.input_layernorm.weight", DType::kF32, {16});
  w.write();
  ExportOptions opt;
  opt.weights = WeightsMode::kF16;
  ExportPlan p = plan(opt);
  EXPECT_EQ(constant(p, "lm_head.weight"), nullptr);
  EXPECT_EQ(producer(method(p, "decode"), "logits")->inputs[1], "embed_tokens.weight");
  const PlannedConstant* e = constant(p, "embed_tokens.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type, (TensorType{DType::kF16, {32, 16}}));
  std::vector<uint16_t> h(32 * 16);
  ASSERT_TRUE(e->produce(std::as_writable_bytes(std::span(h))).ok());
  for (size_t i = 0; i < h.size(); i += 37) EXPECT_NEAR(f16_bits_to_f32(h[i]), embed[i], 1e-3) << i;
  const PlannedConstant* n = constant(p, "layers.0.input_layernorm.weight");
  EXPECT_EQ(n->type.dtype, DType::kF32);  // norms stay f32
  EXPECT_EQ(produce_f32(*n), norm);
  EXPECT_EQ(p.metadata.at(std::string(keys::kGeneralWeights)).as_string(), "f16");
}

TEST_F(ExportPlanTest, Bf16CheckpointKeepAndWiden) {
  write_model(llama_config(), DType::kBF16);
  ExportPlan keep = plan();
  EXPECT_EQ(constant(keep, "layers.1.mlp.up_proj.weight")->type.dtype, DType::kBF16);
  EXPECT_EQ(constant(keep, "norm.weight")->type.dtype, DType::kF32);
  ExportOptions opt;
  opt.weights = WeightsMode::kF32;
  ExportPlan wide = plan(opt);
  const PlannedConstant* up = constant(wide, "layers.1.mlp.up_proj.weight");
  EXPECT_EQ(up->type.dtype, DType::kF32);
  // bf16 → f32 is exact: the upper 16 bits of each f32 are the stored bf16.
  auto ck = Checkpoint::open(dir);
  ASSERT_TRUE(ck.ok());
  auto raw = (*ck)->data("model.layers.1.mlp.up_proj.weight");
  ASSERT_TRUE(raw.ok());
  std::vector<float> got = produce_f32(*up);
  for (size_t i = 0; i < got.size(); ++i) {
    uint16_t b;
    std::memcpy(&b, raw->data() + 2 * i, 2);
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float want;
    std::memcpy(&want, &bits, 4);
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST_F(ExportPlanTest, Llama3RopeScaling) {
  json c = llama_config();
  c["hidden_size"] = 64;
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 64}};
  write_model(c);
  ExportPlan p = plan();
  const PlannedConstant* f = constant(p, "rope.inv_freq");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, (TensorType{DType::kF32, {8}}));
  // torch (HF _compute_llama3_parameters, head_dim 16): high-frequency element kept, element 1 smoothed,
  // the rest divided by the factor.
  expect_close(produce_f32(*f), {1.0, 0.0671330392, 0.00117518846, 0.000227895784, 4.41941702e-05, 8.57025589e-06,
                                 1.66196742e-06, 3.22293289e-07});
}

TEST_F(ExportPlanTest, LinearRopeScalingAndDefaultType) {
  json c = llama_config();
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 8.0}};
  write_model(c);
  expect_close(produce_f32(*constant(plan(), "rope.inv_freq")), ref_inv_freq(10000.0, 4, 8.0));
  c["rope_scaling"] = {{"rope_type", "default"}};
  w.config = c;
  w.write();
  expect_close(produce_f32(*constant(plan(), "rope.inv_freq")), ref_inv_freq(10000.0, 4));
}

TEST_F(ExportPlanTest, UnsupportedRopeType) {
  json c = llama_config();
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  write_model(c);
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("'yarn'"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("rope_scaling"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, UnsupportedModelType) {
  json c = llama_config();
  c["model_type"] = "gpt2";
  write_model(llama_config());
  w.config = c;
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("'gpt2'"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, MissingTensorAndNoOutputWritten) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  w.remove("model.layers.1.mlp.down_proj.weight");
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kMissingTensor);
  EXPECT_NE(e.message().find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << e.message();
  const std::string out = dir + "/out.hfs";
  Status st = export_checkpoint(dir, out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kMissingTensor);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(ExportPlanTest, BadShape) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  w.add("model.layers.0.self_attn.k_proj.weight", DType::kF32, {16, 16});  // expected [8, 16]
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(e.message().find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("expected shape [8, 16], got [16, 16]"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, BadConfigValues) {
  json c = llama_config();
  c.erase("num_hidden_layers");
  write_model(llama_config());
  w.config = c;
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(e.message().find("'num_hidden_layers'"), std::string::npos) << e.message();
  c = llama_config();
  c["hidden_act"] = "relu";
  w.config = c;
  w.write();
  e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("'relu'"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, IntegerWeightsUnsupported) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  w.add_raw({"model.layers.0.mlp.up_proj.weight", "I8", {24, 16}, std::vector<uint8_t>(24 * 16, 1)});
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("i8"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, DefaultPrefillChunkIs128UnderTheContext) {
  json c = llama_config();
  c["max_position_embeddings"] = 1024;
  write_model(c);
  ExportPlan p = plan();
  EXPECT_EQ(meta_int(p, keys::kContextLength), 1024);
  EXPECT_EQ(meta_int(p, keys::kPrefillTokens), 128);
  EXPECT_EQ(meta_ints(p, keys::kPrefillVariantTokens), (std::vector<int64_t>{8, 32, 64}));  // C/16, C/4, C/2
  ExportOptions small;
  small.context = 100;
  EXPECT_EQ(meta_int(plan(small), keys::kPrefillTokens), 100);  // clamped to the context
}

TEST_F(ExportPlanTest, BadOptions) {
  write_model(llama_config());
  ExportOptions opt;
  opt.prefill_chunk = 65;
  EXPECT_EQ(plan_error(opt).code(), ErrorCode::kInvalidArgument);
  opt = {};
  opt.cache_dtype = DType::kBF16;
  EXPECT_EQ(plan_error(opt).code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(weights_mode_from_name("int3").ok());
  EXPECT_EQ(*weights_mode_from_name("int4"), WeightsMode::kInt4);
  EXPECT_EQ(*weights_mode_from_name("bf16"), WeightsMode::kBF16);
}

// Smaller prefill methods: C/16, C/4 and C/2 by default, the caller's sizes (sorted) otherwise, none on request;
// each is the prefill graph at its own T.
TEST_F(ExportPlanTest, PrefillVariantsDefaultChosenAndNone) {
  write_model(llama_config());
  ExportOptions opt;
  opt.prefill_chunk = 32;
  ExportPlan p = plan(opt);
  ASSERT_EQ(p.methods.size(), 5u);
  EXPECT_EQ(p.metadata.at(std::string(keys::kPrefillVariantMethods)).to_json(), R"(["prefill_2","prefill_8","prefill_16"])");
  EXPECT_EQ(p.metadata.at(std::string(keys::kPrefillVariantTokens)).to_json(), "[2,8,16]");
  for (auto [name, T] : {std::pair<std::string, int64_t>{"prefill_2", 2}, {"prefill_8", 8}, {"prefill_16", 16}}) {
    const MethodDef& m = method(p, name);
    EXPECT_EQ(ops(m), ops(method(p, "prefill"))) << name;
    EXPECT_EQ(io(m.inputs, "input_ids")->type, (TensorType{DType::kI32, {1, T}})) << name;
    EXPECT_EQ(io(m.inputs, "attn_mask_global")->type, (TensorType{DType::kF32, {1, 1, T, 64}})) << name;
    EXPECT_EQ(io(m.inputs, "k_cache_0")->type, io(method(p, "prefill").inputs, "k_cache_0")->type) << name;
  }
  opt.prefill_variants = std::vector<int64_t>{5, 3};
  p = plan(opt);
  EXPECT_EQ(p.metadata.at(std::string(keys::kPrefillVariantMethods)).to_json(), R"(["prefill_3","prefill_5"])");
  EXPECT_EQ(p.metadata.at(std::string(keys::kPrefillVariantTokens)).to_json(), "[3,5]");
  opt.prefill_variants = std::vector<int64_t>{};
  p = plan(opt);
  EXPECT_EQ(p.methods.size(), 2u);
  EXPECT_EQ(p.metadata.count(std::string(keys::kPrefillVariantMethods)), 0u);
  EXPECT_EQ(p.metadata.count(std::string(keys::kPrefillVariantTokens)), 0u);
}

TEST_F(ExportPlanTest, BadPrefillVariants) {
  write_model(llama_config());
  ExportOptions opt;
  opt.prefill_chunk = 16;
  for (auto [list, want] : {std::pair<std::vector<int64_t>, std::string>{{0}, "variant 0 must be in [1, 15]"},
                            {{4, 16}, "variant 16 must be in [1, 15]"},
                            {{4, 2, 4}, "variant 4 is listed twice"},
                            {std::vector<int64_t>(17, 3), "at most 16 prefill variants, got 17"}}) {
    opt.prefill_variants = list;
    Error e = plan_error(opt);
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find(want), std::string::npos) << e.message();
  }
}

TEST_F(ExportPlanTest, ShardedCheckpoint) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  w.write(3);
  ExportPlan p = plan();
  EXPECT_EQ(meta_int(p, keys::kNumLayers), 2);
}

TEST_F(ExportPlanTest, Qwen2SlidingFromMaxWindowLayers) {
  json c = llama_config();
  c["model_type"] = "qwen2";
  c["num_hidden_layers"] = 4;
  c["use_sliding_window"] = true;
  c["max_window_layers"] = 2;
  c["sliding_window"] = 8;
  write_model(c);
  ExportOptions opt;
  opt.prefill_chunk = 4;
  ExportPlan p = plan(opt);
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds), (std::vector<std::string>{"global", "global", "sliding", "sliding"}));
  EXPECT_EQ(meta_ints(p, keys::kLayerCacheLengths), (std::vector<int64_t>{64, 64, 11, 11}));  // 8 + 4 - 1
  EXPECT_EQ(meta_int(p, keys::kSlidingWindow), 8);
  const MethodDef& m = method(p, "prefill");
  EXPECT_EQ(io_names(m.inputs),
            (std::vector<std::string>{"input_ids", "position_ids", "logits_index", "cache_slots_global", "attn_mask_global",
                                      "cache_slots_sliding", "attn_mask_sliding", "k_cache_0", "v_cache_0", "k_cache_1",
                                      "v_cache_1", "k_cache_2", "v_cache_2", "k_cache_3", "v_cache_3"}));
  EXPECT_EQ(io(m.inputs, "attn_mask_sliding")->type, (TensorType{DType::kF32, {1, 1, 4, 11}}));
  EXPECT_EQ(io(m.inputs, "k_cache_2")->type, (TensorType{DType::kF32, {1, 2, 11, 4}}));
  EXPECT_EQ(m.outputs[5].type, (TensorType{DType::kF32, {1, 2, 11, 4}}));  // k_cache_2_out
  EXPECT_EQ(producer(m, "l2.attn")->inputs[3], "attn_mask_sliding");
  EXPECT_EQ(producer(m, "k_cache_2_out")->inputs[2], "cache_slots_sliding");
  EXPECT_EQ(producer(m, "l1.attn")->inputs[3], "attn_mask_global");
  EXPECT_EQ(producer(m, "l0.q_proj")->inputs,
            (std::vector<std::string>{"l0.attn_norm", "layers.0.self_attn.q_proj.weight", "layers.0.self_attn.q_proj.bias"}));
  EXPECT_EQ(producer(m, "l0.o_proj")->inputs.size(), 2u);
  EXPECT_EQ(constant(p, "layers.0.self_attn.v_proj.bias")->type, (TensorType{DType::kF32, {8}}));

  // Ring capped by the context; use_sliding_window false → all global and W = 0.
  ExportOptions tight;
  tight.context = 10;
  tight.prefill_chunk = 4;
  EXPECT_EQ(meta_ints(plan(tight), keys::kLayerCacheLengths), (std::vector<int64_t>{10, 10, 10, 10}));
  c["use_sliding_window"] = false;
  w.config = c;
  w.write();
  ExportPlan g = plan();
  EXPECT_EQ(meta_strings(g, keys::kLayerKinds), (std::vector<std::string>(4, "global")));
  EXPECT_EQ(meta_int(g, keys::kSlidingWindow), 0);
  EXPECT_EQ(io(method(g, "decode").inputs, "attn_mask_sliding"), nullptr);
}

TEST_F(ExportPlanTest, LayerTypesOverride) {
  json c = llama_config();
  c["model_type"] = "qwen2";
  c["sliding_window"] = 8;
  c["layer_types"] = {"sliding_attention", "full_attention"};
  write_model(c);
  EXPECT_EQ(meta_strings(plan(), keys::kLayerKinds), (std::vector<std::string>{"sliding", "global"}));
  c["layer_types"] = {"sliding_attention", "chunked_attention"};
  w.config = c;
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("chunked_attention"), std::string::npos) << e.message();
  c["layer_types"] = {"sliding_attention"};
  w.config = c;
  w.write();
  EXPECT_EQ(plan_error().code(), ErrorCode::kBadCheckpoint);
}

TEST_F(ExportPlanTest, Qwen3QkNorm) {
  json c = llama_config();
  c["model_type"] = "qwen3";
  c["head_dim"] = 8;  // decoupled from hidden / heads
  write_model(c);
  ExportPlan p = plan();
  const MethodDef& m = method(p, "decode");
  const NodeDef* qn = producer(m, "l1.q_normed");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->op, "rms_norm");
  EXPECT_EQ(qn->inputs, (std::vector<std::string>{"l1.q", "layers.1.self_attn.q_norm.weight"}));
  EXPECT_EQ(qn->attrs.count("unit_offset"), 0u);
  EXPECT_EQ(producer(m, "l1.q_rot")->inputs[0], "l1.q_normed");
  EXPECT_EQ(producer(m, "l1.k_rot")->inputs[0], "l1.k_normed");
  EXPECT_EQ(producer(m, "l1.q")->attrs.at("shape"), Value::int_array({1, 1, 4, 8}));
  EXPECT_EQ(constant(p, "layers.1.self_attn.q_proj.weight")->type.shape, (Shape{32, 16}));
  EXPECT_EQ(meta_int(p, keys::kHeadDim), 8);
  EXPECT_DOUBLE_EQ(producer(m, "l0.attn")->attrs.at("scale").as_float(), 1.0 / std::sqrt(8.0));
}

// A llama-shaped checkpoint turned into a mixtral one: 11 experts (experts.10 sorts before experts.2 as a
// string), their w1/w3/w2 tensors recorded per expert so the stacked constants can be checked slice by slice.
struct MixtralExperts {
  std::map<std::string, std::vector<std::vector<float>>> values;  // "w1" → per expert
};

MixtralExperts write_mixtral(CheckpointWriter& w, int64_t experts, int64_t top_k) {
  json c = llama_config();
  w.config = c;
  testing::write_tiny_model(w);
  c["model_type"] = "mixtral";
  c["num_local_experts"] = experts;
  c["num_experts_per_tok"] = top_k;
  w.config = c;
  const int64_t H = 16, I = 24;
  MixtralExperts out;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) w.remove(p + "mlp." + proj + ".weight");
    w.add(p + "block_sparse_moe.gate.weight", DType::kF32, {experts, H});
    for (int64_t e = 0; e < experts; ++e)
      for (const char* proj : {"w1", "w3", "w2"}) {
        std::vector<int64_t> shape = std::string(proj) == "w2" ? std::vector<int64_t>{H, I} : std::vector<int64_t>{I, H};
        auto v = w.add(p + "block_sparse_moe.experts." + std::to_string(e) + "." + proj + ".weight", DType::kF32, shape);
        if (l == 0) out.values[proj].push_back(v);
      }
  }
  w.write();
  return out;
}

TEST_F(ExportPlanTest, MixtralStacksExpertsByNumericIndexIntoOneMoeNode) {
  const MixtralExperts ex = write_mixtral(w, 11, 2);
  ExportPlan p = plan();
  const MethodDef& m = method(p, "decode");
  const NodeDef* router = producer(m, "l0.router");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->op, "linear");
  EXPECT_EQ(router->inputs, (std::vector<std::string>{"l0.ff_norm", "layers.0.block_sparse_moe.gate.weight"}));
  const NodeDef* moe = producer(m, "l0.experts");
  ASSERT_NE(moe, nullptr);
  EXPECT_EQ(moe->op, "moe");
  const std::string s = "layers.0.block_sparse_moe.experts.";
  EXPECT_EQ(moe->inputs, (std::vector<std::string>{"l0.ff_norm", "l0.router", s + "gate_proj.weight", s + "up_proj.weight",
                                                   s + "down_proj.weight"}));
  EXPECT_EQ(moe->attrs.at("top_k").as_int(), 2);
  EXPECT_TRUE(moe->attrs.at("norm_topk_prob").as_bool());  // mixtral always renormalizes
  EXPECT_EQ(producer(m, "l0.out")->inputs, (std::vector<std::string>{"l0.h_attn", "l0.experts"}));
  for (const auto& [proj, name] : std::map<std::string, std::string>{{"w1", "gate_proj"}, {"w3", "up_proj"}, {"w2", "down_proj"}}) {
    const PlannedConstant* c = constant(p, s + name + ".weight");
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->type.shape, name == "down_proj" ? (Shape{11, 16, 24}) : (Shape{11, 24, 16}));
    const std::vector<float> got = produce_f32(*c);
    const auto& want = ex.values.at(proj);
    const size_t per = got.size() / 11;
    for (size_t e = 0; e < 11; ++e)
      ASSERT_EQ(std::vector<float>(got.begin() + static_cast<std::ptrdiff_t>(e * per),
                                   got.begin() + static_cast<std::ptrdiff_t>((e + 1) * per)),
                want[e])
          << name << " expert " << e;
  }
}

TEST_F(ExportPlanTest, MoeExpertsQuantizedWithPerExpertScales) {
  write_mixtral(w, 11, 2);
  ExportOptions opt;
  opt.weights = WeightsMode::kInt8;
  std::vector<std::string> reported;
  opt.on_quantized = [&](const std::string& name, DType, double err) {
    reported.push_back(name);
    EXPECT_LT(err, 0.02) << name;
  };
  ExportPlan p = plan(opt);
  const std::string s = "layers.1.block_sparse_moe.experts.";
  const NodeDef* moe = producer(method(p, "decode"), "l1.experts");
  ASSERT_NE(moe, nullptr);
  ASSERT_EQ(moe->inputs.size(), 8u);
  EXPECT_EQ(moe->inputs[5], s + "gate_proj.weight.scale");
  EXPECT_EQ(moe->inputs[7], s + "down_proj.weight.scale");
  EXPECT_EQ(constant(p, s + "up_proj.weight")->type, (TensorType{DType::kI8, {11, 24, 16}}));
  EXPECT_EQ(constant(p, s + "down_proj.weight.scale")->type, (TensorType{DType::kF32, {11, 16}}));
  std::vector<std::byte> buf(constant(p, s + "gate_proj.weight")->type.nbytes());
  ASSERT_TRUE(constant(p, s + "gate_proj.weight")->produce(buf).ok());
  EXPECT_EQ(reported, (std::vector<std::string>{s + "gate_proj.weight"}));  // one report per stacked projection
}

TEST_F(ExportPlanTest, MoeCheckpointErrorsNameTheKeyOrTensor) {
  write_mixtral(w, 11, 2);
  w.remove("model.layers.1.block_sparse_moe.experts.10.w2.weight");
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kMissingTensor);
  EXPECT_NE(e.message().find("experts.10.w2.weight"), std::string::npos) << e.message();
  CheckpointWriter again{dir};
  write_mixtral(again, 11, 12);
  e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(e.message().find("num_experts_per_tok"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, MistralSliding) {
  json c = llama_config();
  c["model_type"] = "mistral";
  c["sliding_window"] = nullptr;
  write_model(c);
  EXPECT_EQ(meta_strings(plan(), keys::kLayerKinds), (std::vector<std::string>{"global", "global"}));
  c["sliding_window"] = 8;
  w.config = c;
  w.write();
  ExportOptions opt;
  opt.prefill_chunk = 16;  // C > W
  ExportPlan p = plan(opt);
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds), (std::vector<std::string>{"sliding", "sliding"}));
  EXPECT_EQ(meta_ints(p, keys::kLayerCacheLengths), (std::vector<int64_t>{23, 23}));
  EXPECT_EQ(io_names(method(p, "decode").inputs),
            (std::vector<std::string>{"input_ids", "position_ids", "logits_index", "cache_slots_sliding", "attn_mask_sliding",
                                      "k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}));
}

TEST_F(ExportPlanTest, Gemma2) {
  write_model(gemma2_config());
  ExportOptions opt;
  opt.prefill_chunk = 4;
  ExportPlan p = plan(opt);
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds), (std::vector<std::string>{"sliding", "global", "sliding", "global"}));
  EXPECT_EQ(meta_ints(p, keys::kLayerCacheLengths), (std::vector<int64_t>{11, 64, 11, 64}));
  EXPECT_EQ(meta_int(p, keys::kPadTokenId), 0);
  const MethodDef& m = method(p, "decode");
  std::vector<std::string> want = {"embedding", "scale"};
  const std::vector<std::string> layer = {
      "rms_norm", "linear", "reshape", "linear", "reshape", "linear", "reshape", "rope", "rope", "kv_cache_write",
      "kv_cache_write", "attention", "reshape", "linear", "rms_norm", "add", "rms_norm", "linear", "linear",
      "gelu_tanh", "mul", "linear", "rms_norm", "add"};
  for (int l = 0; l < 4; ++l) want.insert(want.end(), layer.begin(), layer.end());
  want.insert(want.end(), {"gather", "rms_norm", "linear", "softcap"});
  EXPECT_EQ(ops(m), want);
  EXPECT_DOUBLE_EQ(producer(m, "embed.scaled")->attrs.at("value").as_float(), 4.0);  // sqrt(16)
  const NodeDef* att = producer(m, "l0.attn");
  EXPECT_DOUBLE_EQ(att->attrs.at("scale").as_float(), 0.25);  // query_pre_attn_scalar 16
  EXPECT_DOUBLE_EQ(att->attrs.at("softcap").as_float(), 50.0);
  EXPECT_DOUBLE_EQ(producer(m, "logits")->attrs.at("cap").as_float(), 30.0);
  EXPECT_EQ(producer(m, "logits.raw")->inputs[1], "embed_tokens.weight");  // tied by default
  EXPECT_TRUE(producer(m, "l0.attn_norm")->attrs.at("unit_offset").as_bool());
  EXPECT_EQ(producer(m, "l0.post_attn_norm")->inputs[1], "layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(producer(m, "l0.ff_norm")->inputs[1], "layers.0.pre_feedforward_layernorm.weight");
  EXPECT_EQ(producer(m, "l0.post_ff_norm")->inputs[1], "layers.0.post_feedforward_layernorm.weight");
  EXPECT_EQ(producer(m, "l0.h_attn")->inputs, (std::vector<std::string>{"embed.scaled", "l0.post_attn_norm"}));
  expect_close(produce_f32(*constant(p, "rope.inv_freq")), ref_inv_freq(10000.0, 8));
}

TEST_F(ExportPlanTest, Gemma3TextRopePerKind) {
  write_model(gemma3_text_config());
  ExportPlan p = plan();
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds),
            (std::vector<std::string>{"sliding", "sliding", "global", "sliding", "sliding", "global"}));
  const MethodDef& m = method(p, "prefill");
  EXPECT_EQ(producer(m, "l0.q_rot")->inputs[2], "rope.inv_freq.sliding");
  EXPECT_EQ(producer(m, "l2.k_rot")->inputs[2], "rope.inv_freq.global");
  expect_close(produce_f32(*constant(p, "rope.inv_freq.sliding")), ref_inv_freq(10000.0, 8));
  expect_close(produce_f32(*constant(p, "rope.inv_freq.global")), ref_inv_freq(1000000.0, 8, 8.0));
  const NodeDef* qn = producer(m, "l0.q_normed");
  ASSERT_NE(qn, nullptr);
  EXPECT_TRUE(qn->attrs.at("unit_offset").as_bool());
  EXPECT_EQ(producer(m, "l0.attn")->attrs.count("softcap"), 0u);
  EXPECT_EQ(producer(m, "logits")->op, "linear");  // no final softcap

  json c = gemma3_text_config();
  c.erase("sliding_window_pattern");  // default 6
  w.config = c;
  w.write();
  EXPECT_EQ(meta_strings(plan(), keys::kLayerKinds),
            (std::vector<std::string>{"sliding", "sliding", "sliding", "sliding", "sliding", "global"}));
}

TEST_F(ExportPlanTest, Gemma3MultimodalTextConfig) {
  json text = gemma3_text_config();
  text.erase("bos_token_id");
  json c = {{"model_type", "gemma3"}, {"text_config", text}, {"bos_token_id", 2}, {"eos_token_id", {1, 3}}};
  write_model(c);
  w.add("vision_tower.patch.weight", DType::kF32, {4, 4});  // ignored
  w.write();
  ExportPlan p = plan();
  EXPECT_EQ(meta_int(p, keys::kNumLayers), 6);
  EXPECT_EQ(meta_int(p, keys::kBosTokenId), 2);
  EXPECT_EQ(meta_ints(p, keys::kEosTokenIds), (std::vector<int64_t>{1}));  // text_config's eos overrides the root's
  EXPECT_NE(constant(p, "layers.5.self_attn.k_norm.weight"), nullptr);
  EXPECT_EQ(p.metadata.at(std::string(keys::kGeneralArchitecture)).as_string(), "gemma3");
}

TEST_F(ExportPlanTest, Phi3FusedSplitAndPartialRotary) {
  json c = llama_config();
  c["model_type"] = "phi3";
  c["hidden_size"] = 32;  // head_dim 8
  c["partial_rotary_factor"] = 0.5;
  c["sliding_window"] = 8;
  w.config = c;
  testing::write_tiny_model(w);
  auto qkv = w.add("model.layers.1.self_attn.qkv_proj.weight", DType::kF32, {64, 32});  // q 32 rows | k 16 | v 16
  auto gate_up = w.add("model.layers.0.mlp.gate_up_proj.weight", DType::kF32, {48, 32});
  w.write();
  ExportPlan p = plan();
  auto rows = [](const std::vector<float>& v, int64_t begin, int64_t end, int64_t cols) {
    return std::vector<float>(v.begin() + begin * cols, v.begin() + end * cols);
  };
  EXPECT_EQ(constant(p, "layers.1.self_attn.q_proj.weight")->type.shape, (Shape{32, 32}));
  EXPECT_EQ(produce_f32(*constant(p, "layers.1.self_attn.q_proj.weight")), rows(qkv, 0, 32, 32));
  EXPECT_EQ(produce_f32(*constant(p, "layers.1.self_attn.k_proj.weight")), rows(qkv, 32, 48, 32));
  EXPECT_EQ(produce_f32(*constant(p, "layers.1.self_attn.v_proj.weight")), rows(qkv, 48, 64, 32));
  EXPECT_EQ(produce_f32(*constant(p, "layers.0.mlp.gate_proj.weight")), rows(gate_up, 0, 24, 32));
  EXPECT_EQ(produce_f32(*constant(p, "layers.0.mlp.up_proj.weight")), rows(gate_up, 24, 48, 32));
  expect_close(produce_f32(*constant(p, "rope.inv_freq")), ref_inv_freq(10000.0, 4));  // rotary dim 4 of 8
  EXPECT_EQ(meta_strings(p, keys::kLayerKinds), (std::vector<std::string>{"sliding", "sliding"}));

  c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
  w.config = c;
  w.write();
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupportedModel);
  EXPECT_NE(e.message().find("longrope"), std::string::npos) << e.message();
}

TEST_F(ExportPlanTest, TokenizerFilesEmbedded) {
  write_model(llama_config());
  // The smallest tokenizer the runtime loads and that encodes text: a one-letter BPE vocabulary.
  const std::string tokenizer = R"({"model":{"type":"BPE","vocab":{"H":0},"merges":[]}})";
  testing::write_text(dir + "/tokenizer.json", tokenizer);
  testing::write_text(dir + "/special_tokens_map.json", "{}");
  ExportPlan p = plan();
  const PlannedConstant* t = constant(p, std::string(keys::kFilePrefix) + "tokenizer.json");
  ASSERT_NE(t, nullptr);
  const auto n = static_cast<int64_t>(tokenizer.size());
  EXPECT_EQ(t->type, (TensorType{DType::kU8, {n}}));
  std::string bytes(tokenizer.size(), '\0');
  ASSERT_TRUE(t->produce(std::as_writable_bytes(std::span(bytes.data(), bytes.size()))).ok());
  EXPECT_EQ(bytes, tokenizer);
  EXPECT_NE(constant(p, std::string(keys::kFilePrefix) + "special_tokens_map.json"), nullptr);
  EXPECT_EQ(constant(p, std::string(keys::kFilePrefix) + "tokenizer_config.json"), nullptr);
}

TEST(ExportStories, RealCheckpointPlan) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  ASSERT_TRUE(test::fixture_exists(test::stories_dir())) << test::missing(test::stories_dir());
  auto p = build_export_plan(test::stories_dir(), {});
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(meta_int(*p, keys::kNumLayers), 5);
  EXPECT_EQ(meta_int(*p, keys::kNumKvHeads), 4);
  EXPECT_EQ(meta_int(*p, keys::kHeadDim), 8);
  EXPECT_EQ(meta_int(*p, keys::kVocabSize), 512);
  EXPECT_EQ(meta_int(*p, keys::kContextLength), 512);
  EXPECT_EQ(meta_int(*p, keys::kPrefillTokens), 128);  // kDefaultPrefillChunk
  EXPECT_EQ(meta_int(*p, keys::kBosTokenId), 1);
  EXPECT_EQ(meta_ints(*p, keys::kEosTokenIds), (std::vector<int64_t>{2}));
  EXPECT_EQ(meta_strings(*p, keys::kLayerKinds), (std::vector<std::string>(5, "global")));
  EXPECT_EQ(constant(*p, "lm_head.weight"), nullptr);
  EXPECT_EQ(producer(method(*p, "decode"), "logits")->inputs[1], "embed_tokens.weight");
  EXPECT_NE(constant(*p, std::string(keys::kFilePrefix) + "tokenizer.json"), nullptr);
  EXPECT_EQ(io(method(*p, "decode").inputs, "k_cache_4")->type, (TensorType{DType::kF32, {1, 4, 512, 8}}));
  // First embedding row straight from the safetensors file.
  auto ck = Checkpoint::open(test::stories_dir());
  ASSERT_TRUE(ck.ok());
  auto raw = (*ck)->data("model.embed_tokens.weight");
  ASSERT_TRUE(raw.ok());
  std::vector<float> embed = produce_f32(*constant(*p, "embed_tokens.weight"));
  ASSERT_EQ(embed.size(), 512u * 64u);
  EXPECT_EQ(std::memcmp(embed.data(), raw->data(), raw->size()), 0);
}

TEST(ExportCli, ExportsStories) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string dir = testing::temp_dir("cli");
  const std::string out = dir + "/stories.hfs";
  ASSERT_TRUE(test::fixture_exists(test::stories_dir())) << test::missing(test::stories_dir());
  const std::string cmd = std::string(HFS_CLI_PATH) + " export " + test::stories_dir() + " -o " + out +
                          " --prefill-chunk 8 --context 64 --weights f16 --cache-dtype f16 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

TEST(ExportCli, PrefillVariantsOption) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string dir = testing::temp_dir("cli_variants");
  ASSERT_TRUE(test::fixture_exists(test::stories_dir())) << test::missing(test::stories_dir());
  const std::string base = std::string(HFS_CLI_PATH) + " export " + test::stories_dir() + " --prefill-chunk 8 --context 64 -o ";
  EXPECT_EQ(std::system((base + dir + "/a.hfs --prefill-variants 2,4 2>&1").c_str()), 0);
  auto a = Program::load(dir + "/a.hfs");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ((*a)->meta(keys::kPrefillVariantTokens)->to_json(), "[2,4]");
  EXPECT_EQ(std::system((base + dir + "/b.hfs --prefill-variants none 2>&1").c_str()), 0);
  auto b = Program::load(dir + "/b.hfs");
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ((*b)->meta(keys::kPrefillVariantTokens), nullptr);
  EXPECT_EQ((*b)->methods().size(), 2u);
  // Not a list of positive integers: usage error (2), nothing written.
  EXPECT_EQ(WEXITSTATUS(std::system((base + dir + "/c.hfs --prefill-variants 2,x 2>/dev/null").c_str())), 2);
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.hfs"));
  std::filesystem::remove_all(dir);
}

TEST(ExportCli, ReportsErrors) {
  const std::string dir = testing::temp_dir("cli_errors");
  const std::string out = dir + "/never.hfs";
  const std::string cmd = std::string(HFS_CLI_PATH) + " export " + dir + "/missing -o " + out + " 2>/dev/null";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hfs
