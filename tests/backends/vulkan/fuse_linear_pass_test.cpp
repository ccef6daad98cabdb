// The Vulkan backend's lowering pass (src/backends/vulkan/fuse_linear_pass.h) on tiny exported llama and
// qwen2 (Q/K/V biases) programs at every weight format the Vulkan linear reads: it fires (Q/K/V and
// gate/up linears gone, one fused linear plus slices per group, every node still on Vulkan), and the
// logits equal the unfused Vulkan run and cpu_ref's. A caller pass runs first and the backend pass fuses
// what the caller left (documented order: caller passes, then backend passes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "backends/vulkan/backend.h"
#include "backends/vulkan/fuse_linear_pass.h"
#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/ext/ops.h"
#include "hfstatic/program.h"
#include "support/checkpoint_writer.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {
namespace {

constexpr int kLayers = 2;
const char* const kProjections[] = {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"};

struct Case {
  const char* name;
  const char* arch;
  WeightsMode weights;
};

// Same shapes as tests/support/hf_static_fixture.h's tiny models (hidden 64: a multiple of the q4_0 block).
std::string export_tiny(const Case& c) {
  static std::map<std::string, std::string> cache;
  if (auto it = cache.find(c.name); it != cache.end()) return it->second;
  hfs::testing::CheckpointWriter w(hfs::testing::temp_dir(std::string("fuse_") + c.name));
  const bool qwen = std::string(c.arch) == "qwen2";
  w.config = hfs::testing::tiny_config(c.arch, qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM", kLayers);
  hfs::testing::write_tiny_model(w, DType::kF32);
  w.write();
  ExportOptions opt;
  opt.prefill_chunk = 4;
  opt.context = 24;
  opt.weights = c.weights;
  opt.progress = false;
  const std::string out = w.dir() + "/model.hfs";
  Status st = export_checkpoint(w.dir(), out, opt);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  cache[c.name] = out;
  return out;
}

MethodOptions vulkan_options(bool passes, std::vector<Pass> caller = {}) {
  MethodOptions mo;
  mo.backends.backends = {"vulkan"};
  mo.backends.settings["vulkan"] = Value::object();
  mo.backends.settings["vulkan"].set("passes", Value(passes));
  mo.passes = std::move(caller);
  return mo;
}

size_t count_op(const MethodDef& m, std::string_view op) {
  return static_cast<size_t>(
      std::count_if(m.nodes.begin(), m.nodes.end(), [&](const NodeDef& n) { return n.op == op; }));
}

const NodeDef* producer(const MethodDef& m, const std::string& value) {
  for (const NodeDef& n : m.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end()) return &n;
  return nullptr;
}

std::unique_ptr<Runner> runner(const std::string& path, const MethodOptions& mo) {
  RunnerOptions o;
  o.io.method = mo;
  auto r = Runner::load(path, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? std::move(*r) : nullptr;
}

// Largest |a - b| over the logits of prefill and `steps` greedy decode steps (driven by b's argmax), and
// the largest |b| (the scale the tolerance is relative to).
std::pair<float, float> worst_difference(Runner& a, Runner& b, int steps) {
  const std::vector<int32_t> prompt = hfs::test::random_tokens(6, 512, 5);
  EXPECT_TRUE(a.prefill(prompt).ok());
  EXPECT_TRUE(b.prefill(prompt).ok());
  float worst = 0, scale = 1;
  for (int step = 0; step <= steps; ++step) {
    auto x = a.logits();
    auto y = b.logits();
    EXPECT_EQ(x.size(), y.size());
    if (x.size() != y.size() || x.empty()) return {INFINITY, 1};
    for (size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, std::fabs(x[i] - y[i]));
      scale = std::max(scale, std::fabs(y[i]));
    }
    if (step == steps) break;
    const int32_t next = static_cast<int32_t>(std::max_element(y.begin(), y.end()) - y.begin());
    EXPECT_TRUE(a.decode_step(next).ok());
    EXPECT_TRUE(b.decode_step(next).ok());
  }
  return {worst, scale};
}

class VulkanFuseLinears : public ::testing::TestWithParam<Case> {};

TEST_P(VulkanFuseLinears, FusesQkvAndGateUpInEveryMethod) {
  const std::string path = export_tiny(GetParam());
  auto program = Program::load(path);
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  for (const MethodDef& original : (*program)->methods()) {
    auto fused = Method::load(*program, original.name, vulkan_options(true));
    auto plain = Method::load(*program, original.name, vulkan_options(false));
    ASSERT_TRUE(fused.ok()) << fused.error().to_string();
    ASSERT_TRUE(plain.ok()) << plain.error().to_string();
    const MethodDef& f = (*fused)->def();
    EXPECT_EQ((*plain)->def().nodes.size(), original.nodes.size()) << "passes off leave the graph as it is";
    // Per layer: Q/K/V (3 linears) → 1 linear + 3 slices; gate/up (2) → 1 + 2.
    EXPECT_EQ(count_op(f, "linear"), count_op(original, "linear") - 3 * kLayers) << original.name;
    EXPECT_EQ(count_op(f, "slice"), count_op(original, "slice") + 5 * kLayers) << original.name;
    EXPECT_EQ(f.nodes.size(), original.nodes.size() + 2 * kLayers) << original.name;
    for (int l = 0; l < kLayers; ++l)
      for (const char* proj : kProjections) {
        const std::string value = "l" + std::to_string(l) + "." + proj;
        const NodeDef* p = producer(f, value);
        ASSERT_NE(p, nullptr) << value;
        EXPECT_EQ(p->op, "slice") << original.name << ": " << value;
        const NodeDef* src = producer(f, p->inputs[0]);
        ASSERT_NE(src, nullptr);
        EXPECT_EQ(src->op, "linear");
        EXPECT_EQ(src->inputs[1].rfind("vulkan.concat(", 0), 0u) << src->inputs[1];
        // qwen2's Q/K/V biases and int8's per-row scales are concatenated with their weights.
        const bool attn = std::string(proj).size() == 6, qwen = std::string(GetParam().arch) == "qwen2";
        const bool int8 = GetParam().weights == WeightsMode::kInt8;
        ASSERT_EQ(src->inputs.size(), int8 ? 4u : qwen && attn ? 3u : 2u) << value;
        if (qwen && attn) {
          EXPECT_EQ(src->inputs[2].rfind("vulkan.concat(", 0), 0u) << src->inputs[2];
        }
        if (int8) {
          EXPECT_EQ(src->inputs[3].rfind("vulkan.concat(", 0), 0u) << src->inputs[3];
        }
      }
    for (const NodeDef& n : f.nodes) {  // no linear reads an original projection weight any more
      if (n.op != "linear" || n.inputs[1].rfind("vulkan.concat(", 0) == 0) continue;
      for (const char* proj : kProjections)
        EXPECT_EQ(n.inputs[1].find(std::string(proj) + ".weight"), std::string::npos) << n.inputs[1];
    }
    EXPECT_EQ((*fused)->plan().partition_backends, std::vector<std::string>{"vulkan"}) << original.name;
  }
}

TEST_P(VulkanFuseLinears, LogitsEqualUnfusedAndCpuRef) {
  const std::string path = export_tiny(GetParam());
  MethodOptions ref;
  ref.backends.backends = {"cpu_ref"};
  auto fused = runner(path, vulkan_options(true)), plain = runner(path, vulkan_options(false));
  auto fused2 = runner(path, vulkan_options(true)), cpu = runner(path, ref);
  ASSERT_TRUE(fused && plain && fused2 && cpu);
  // Summation order differs (one GEMV over the concatenated rows vs one per projection): float tolerance.
  auto [w1, s1] = worst_difference(*fused, *plain, 6);
  EXPECT_LT(w1, 1e-4f * s1) << "fused vs unfused Vulkan";
  auto [w2, s2] = worst_difference(*fused2, *cpu, 6);
  EXPECT_LT(w2, 1e-4f * s2) << "fused Vulkan vs cpu_ref";
}

INSTANTIATE_TEST_SUITE_P(
    Vulkan, VulkanFuseLinears,
    ::testing::Values(Case{"llama_f32", "llama", WeightsMode::kF32}, Case{"llama_f16", "llama", WeightsMode::kF16},
                      Case{"llama_bf16", "llama", WeightsMode::kBF16}, Case{"llama_int8", "llama", WeightsMode::kInt8},
                      Case{"llama_int4", "llama", WeightsMode::kInt4}, Case{"qwen2_f32", "qwen2", WeightsMode::kF32},
                      Case{"qwen2_int8", "qwen2", WeightsMode::kInt8}, Case{"qwen2_int4", "qwen2", WeightsMode::kInt4}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// A caller pass that moves layer 0's K projection onto a bf16 copy of its weight (a caller's own rewrite),
// counting the linears it sees: it must see the unfused graph, and the backend pass must then fuse only
// what matches exactly (layer 0: Q with V; layer 1: Q, K and V).
Pass bf16_k0_pass(size_t* linears_seen) {
  return Pass{"test.k0_to_bf16", [linears_seen](MethodDef& m, ConstantStore& c) -> Status {
                *linears_seen = count_op(m, "linear");
                const TensorView* w = c.find("layers.0.self_attn.k_proj.weight");
                if (!w || w->dtype != DType::kF32) return make_error(ErrorCode::kNotFound, "k_proj weight (f32)");
                const int64_t n = w->shape.numel();
                std::vector<uint16_t> bf16(static_cast<size_t>(n));
                for (int64_t i = 0; i < n; ++i) {
                  uint32_t bits;
                  std::memcpy(&bits, w->data<const float>() + i, 4);
                  bf16[static_cast<size_t>(i)] = static_cast<uint16_t>(bits >> 16);  // truncation: any bf16 will do
                }
                if (!c.find("caller.k0_bf16"))
                  HFS_TRY(c.add("caller.k0_bf16", {DType::kBF16, w->shape}, std::as_bytes(std::span(bf16))));
                for (NodeDef& node : m.nodes)
                  if (node.op == "linear" && node.outputs[0] == "l0.k_proj") node.inputs[1] = "caller.k0_bf16";
                return Ok{};
              }};
}

TEST(VulkanFuseLinearsOrder, CallerPassRunsFirstAndBackendPassFusesWhatMatches) {
  const std::string path = export_tiny(Case{"llama_f32", "llama", WeightsMode::kF32});
  auto program = Program::load(path);
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  const MethodDef* original = (*program)->method("decode");
  ASSERT_NE(original, nullptr);
  size_t seen = 0;
  auto m = Method::load(*program, "decode", vulkan_options(true, {bf16_k0_pass(&seen)}));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(seen, count_op(*original, "linear")) << "the caller pass saw the unfused graph";
  const MethodDef& f = (*m)->def();
  const NodeDef* k0 = producer(f, "l0.k_proj");
  ASSERT_NE(k0, nullptr);
  EXPECT_EQ(k0->op, "linear");
  EXPECT_EQ(k0->inputs[1], "caller.k0_bf16") << "a bf16 weight does not join the f32 ones";
  const NodeDef* q0 = producer(f, "l0.q_proj");
  ASSERT_NE(q0, nullptr);
  ASSERT_EQ(q0->op, "slice");
  EXPECT_EQ(producer(f, q0->inputs[0])->inputs[1],
            "vulkan.concat(layers.0.self_attn.q_proj.weight+layers.0.self_attn.v_proj.weight)");
  const NodeDef* k1 = producer(f, "l1.k_proj");
  ASSERT_NE(k1, nullptr);
  EXPECT_EQ(k1->op, "slice");
  // Layer 0: 3 → 2 linears; layer 1: 3 → 1; both MLPs: 2 → 1.
  EXPECT_EQ(count_op(f, "linear"), count_op(*original, "linear") - 5);
  EXPECT_EQ((*m)->plan().partition_backends, std::vector<std::string>{"vulkan"});

  // Same logits as cpu_ref running the caller pass alone, and not those of the model without it.
  size_t unused = 0;
  MethodOptions ref, ref_plain;
  ref.backends.backends = ref_plain.backends.backends = {"cpu_ref"};
  ref.passes = {bf16_k0_pass(&unused)};
  auto vk = runner(path, vulkan_options(true, {bf16_k0_pass(&unused)}));
  auto cpu = runner(path, ref), vk2 = runner(path, vulkan_options(true, {bf16_k0_pass(&unused)}));
  auto cpu_plain = runner(path, ref_plain);
  ASSERT_TRUE(vk && cpu && vk2 && cpu_plain);
  auto [w, s] = worst_difference(*vk, *cpu, 4);
  EXPECT_LT(w, 1e-4f * s);
  auto [d, s2] = worst_difference(*vk2, *cpu_plain, 0);
  EXPECT_GT(d, 1e-4f * s2) << "the caller's bf16 weight changes the logits";
}

// Every method's store gets the same fused bytes (one host copy; the device upload is keyed by address,
// so one upload too), and the sources' bytes are left as they were.
TEST(VulkanFuseLinearsMemory, MethodsShareOneFusedCopy) {
  auto program = Program::load(export_tiny(Case{"llama_int8", "llama", WeightsMode::kInt8}));
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  const Pass pass = fuse_linear_pass(UINT64_MAX);
  MethodDef decode = *(*program)->method("decode"), prefill = *(*program)->method("prefill");
  auto a = program_constants(*program), b = program_constants(*program);
  ASSERT_TRUE(pass.run(decode, *a).ok());
  ASSERT_TRUE(pass.run(prefill, *b).ok());
  const std::string qkv =
      "vulkan.concat(layers.0.self_attn.q_proj.weight+layers.0.self_attn.k_proj.weight+"
      "layers.0.self_attn.v_proj.weight)";
  const TensorView *x = a->find(qkv), *y = b->find(qkv);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(x->ptr, y->ptr);
  EXPECT_EQ(x->dtype, DType::kI8);
  EXPECT_EQ(x->shape, (Shape{64 + 32 + 32, 64}));
  // Rows in order: Q's, then K's, then V's.
  const TensorView* k = a->find("layers.0.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(std::memcmp(static_cast<const std::byte*>(x->ptr) + 64 * 64, k->ptr, k->nbytes()), 0);
}

// What the device holds with two methods loaded: one upload of each fused weight, read by both methods'
// delegates, and none of the originals it replaces.
TEST(VulkanFuseLinearsMemory, DeviceHoldsTheFusedWeightOnceAndNotTheOriginals) {
  auto program = Program::load(export_tiny(Case{"llama_int8", "llama", WeightsMode::kInt8}));
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  auto a = program_constants(*program), b = program_constants(*program);
  auto decode = Method::create(*(*program)->method("decode"), a, vulkan_options(true));
  auto prefill = Method::create(*(*program)->method("prefill"), b, vulkan_options(true));
  ASSERT_TRUE(decode.ok() && prefill.ok());
  auto ctx = Context::get(-1);
  ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
  const std::string qkv =
      "vulkan.concat(layers.1.self_attn.q_proj.weight+layers.1.self_attn.k_proj.weight+"
      "layers.1.self_attn.v_proj.weight)";
  const TensorView* fused = a->find(qkv);
  ASSERT_NE(fused, nullptr);
  auto buf = (*ctx)->constant(fused->ptr, fused->nbytes(), qkv);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(buf->use_count(), 3) << "the decode and prefill delegates hold the one upload (and this test)";
  const TensorView* q = a->find("layers.1.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  auto original = (*ctx)->constant(q->ptr, q->nbytes(), "q");
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(original->use_count(), 1) << "no delegate uploaded the original Q weight";
}

// Groups that do not match exactly, or whose fused tensors would pass the device's binding limit, stay.
TEST(VulkanFuseLinearsRules, OnlyExactMatchesWithinTheBindingLimit) {
  auto store = owned_constants();
  std::vector<float> w(8 * 4, 0.5f);
  std::vector<uint16_t> h(8 * 4, 0x3c00);
  ASSERT_TRUE(store->add("w0", {DType::kF32, {8, 4}}, std::as_bytes(std::span(w))).ok());
  ASSERT_TRUE(store->add("w1", {DType::kF32, {8, 4}}, std::as_bytes(std::span(w))).ok());
  ASSERT_TRUE(store->add("w2", {DType::kF16, {8, 4}}, std::as_bytes(std::span(h))).ok());
  ASSERT_TRUE(store->add("b0", {DType::kF32, {8}}, std::as_bytes(std::span(w).first(8))).ok());
  MethodDef m;
  m.name = "m";
  m.inputs.push_back({"x", {DType::kF32, {1, 1, 4}}, IORole::kInput, ""});
  m.nodes.push_back({"linear", {"x", "w0"}, {"y0"}, {}});
  m.nodes.push_back({"linear", {"x", "w1", "b0"}, {"y1"}, {}});  // has a bias: no partner
  m.nodes.push_back({"linear", {"x", "w2"}, {"y2"}, {}});        // f16: no partner
  m.nodes.push_back({"linear", {"x", "w1"}, {"y3"}, {}});        // w0's partner
  for (const char* y : {"y0", "y1", "y2", "y3"})
    m.outputs.push_back({y, {DType::kF32, {1, 1, 8}}, IORole::kOutput, ""});

  MethodDef tight = m;
  ASSERT_TRUE(fuse_linear_pass(16 * 4 * 4 - 1).run(tight, *store).ok());
  EXPECT_EQ(count_op(tight, "slice"), 0u) << "a 16 x 4 f32 weight is over a limit of 255 bytes";

  ASSERT_TRUE(fuse_linear_pass(UINT64_MAX).run(m, *store).ok());
  ASSERT_EQ(m.nodes.size(), 5u);
  EXPECT_EQ(m.nodes[0].inputs, (std::vector<std::string>{"x", "vulkan.concat(w0+w1)"}));
  EXPECT_EQ(m.nodes[0].outputs, (std::vector<std::string>{"y0+y3"}));
  EXPECT_EQ(m.nodes[1].outputs[0], "y0");
  EXPECT_EQ(m.nodes[2].outputs[0], "y3");
  EXPECT_EQ(attr_int(m.nodes[2].attrs, "start"), 8);
  EXPECT_EQ(attr_int(m.nodes[2].attrs, "end"), 16);
  EXPECT_EQ(m.nodes[3].inputs[1], "w1");
  EXPECT_EQ(m.nodes[4].inputs[1], "w2");
}

TEST(VulkanFuseLinearsSettings, PassesSettingTurnsTheHookOff) {
  Value on = Value::object(), off = Value::object(), bad = Value::object();
  off.set("passes", Value(false));
  bad.set("passes", Value(1));
  auto a = make_vulkan_backend(on), b = make_vulkan_backend(off), c = make_vulkan_backend(bad);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error().to_string() : a.error().to_string());
  ASSERT_EQ((*a)->passes().size(), 1u);
  EXPECT_EQ((*a)->passes()[0].name, kFuseLinearsPass);
  EXPECT_TRUE((*b)->passes().empty());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("'passes' must be a bool"), std::string::npos) << c.error().to_string();
}

}  // namespace
}  // namespace hfs::vulkan
