#include "support/hf_static_fixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "hfstatic/export.h"
#include "support/checkpoint_writer.h"
#include "support/fixtures.h"

namespace hfs::test {
namespace {

std::string list_key(const char* tag, const std::optional<std::vector<int64_t>>& list) {
  if (!list) return "";
  std::string k = tag;
  for (int64_t t : *list) k += "-" + std::to_string(t);
  return k;
}

std::string key_of(const TinyModel& m) {
  return m.arch + "_c" + std::to_string(m.chunk) + "_n" + std::to_string(m.context) + "_w" +
         std::to_string(m.sliding_window) + "_" + m.cache_dtype + "_" + m.logits + "_l" + std::to_string(m.layers) +
         "_s" + std::to_string(m.seed) + list_key("_v", m.prefill_variants) + "_q" + std::to_string(m.sequences) +
         "_p" + std::to_string(m.pool_slots) + list_key("_t", m.step_sizes) + (m.tokenizer ? "_tok" : "");
}

}  // namespace

std::string temp_dir() { return hfs::testing::temp_dir("hf_static"); }

std::unique_ptr<Runner> runner_on(const std::string& path, const std::string& backend) {
  RunnerOptions o;
  o.io.method.backends.backends = {backend};
  auto r = Runner::load(path, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? std::move(*r) : nullptr;
}

std::string tiny_program(const TinyModel& m) {
  static std::map<std::string, std::string> cache;
  const std::string key = key_of(m);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  hfs::testing::CheckpointWriter w(hfs::testing::temp_dir("ckpt_" + key));
  w.config = hfs::testing::tiny_config(m.arch, m.arch == "mistral" ? "MistralForCausalLM" : "LlamaForCausalLM", m.layers);
  if (m.arch == "mistral") w.config["sliding_window"] = m.sliding_window > 0 ? nlohmann::json(m.sliding_window) : nlohmann::json();
  hfs::testing::write_tiny_model(w, DType::kF32);
  w.write();
  if (m.tokenizer)
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      std::filesystem::copy_file(stories_dir() + "/" + f, w.dir() + "/" + f,
                                 std::filesystem::copy_options::overwrite_existing);

  ExportOptions opt;
  opt.prefill_chunk = m.chunk;
  opt.context = m.context;
  opt.cache_dtype = m.cache_dtype == "f16" ? DType::kF16 : m.cache_dtype == "int8" ? DType::kI8 : DType::kF32;
  opt.logits_all = m.logits == "all";
  opt.prefill_variants = m.prefill_variants;
  opt.sequences = m.sequences;
  opt.step_sizes = m.step_sizes;
  opt.pool_slots = m.pool_slots;
  opt.progress = false;
  const std::string out = w.dir() + "/model.hfs";
  Status st = export_checkpoint(w.dir(), out, opt);
  if (!st.ok()) {
    std::fprintf(stderr, "tiny_program(%s): %s\n", key.c_str(), st.error().to_string().c_str());
    std::abort();
  }
  cache[key] = out;
  return out;
}

Result<std::unique_ptr<Runner>> open_runner(const std::string& path, TailPolicy tail) {
  RunnerOptions o;
  o.tail = tail;
  return Runner::load(path, o);
}

Outcome generate_fresh(const std::string& program, std::span<const int32_t> prompt, const GenerationConfig& g) {
  auto r = Runner::load(program);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r) return {};
  auto out = (*r)->generate(prompt, g);
  EXPECT_TRUE(out.ok()) << out.error().to_string();
  if (!out) return {};
  return {*out, (*r)->stats()};
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int32_t& t : out) t = 3 + static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab - 3));
  return out;
}

}  // namespace hfs::test
