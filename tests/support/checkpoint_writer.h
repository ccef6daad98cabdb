// Test support: writes small HuggingFace-style checkpoint directories (safetensors + config.json).
//
//   hfs::testing::CheckpointWriter w(temp_dir("llama"));
//   w.config = {{"model_type", "llama"}, {"hidden_size", 16}, ...};
//   w.add("model.embed_tokens.weight", hfs::DType::kF32, {32, 16});     // seeded random values
//   w.write();                                                          // or w.write(/*shards=*/2)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hfstatic/dtype.h"

namespace hfs::testing {

struct TestTensor {
  std::string name;
  std::string st_dtype;          // safetensors spelling: "F32", "F16", "BF16", "I8", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;    // raw little-endian data
};

// Values as stored: f32/f16/bf16 encodings of `values` (DType::kF32/kF16/kBF16 only).
TestTensor make_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values);
// Deterministic pseudo-random values in [-0.5, 0.5) from `seed`.
std::vector<float> random_values(size_t n, uint32_t seed);

// A complete safetensors file image; `header_override` replaces the JSON header when non-empty.
std::vector<uint8_t> safetensors_bytes(const std::vector<TestTensor>& tensors, const std::string& header_override = "");
std::string safetensors_header(const std::vector<TestTensor>& tensors);

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
// A fresh empty directory under the build tree's temp area.
std::string temp_dir(const std::string& tag);

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  nlohmann::json config = nlohmann::json::object();
  nlohmann::json generation_config;  // written when not null

  // Random values (seeded by the tensor count) or the given ones; returns the values stored (as f32).
  std::vector<float> add(const std::string& name, DType dtype, std::vector<int64_t> shape);
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values);
  void add_raw(TestTensor t);  // any dtype, bytes as given
  void remove(const std::string& name);

  // config.json, generation_config.json, model.safetensors (shards == 1) or model-0000i-of-0000n.safetensors
  // plus model.safetensors.index.json.
  void write(int shards = 1) const;

 private:
  std::string dir_;
  std::vector<TestTensor> tensors_;
};

// The config of the tiny decoders the tests export: vocabulary 512, hidden 64 (a multiple of the q4_0
// block), 4 query heads over 2 KV heads of dim 16 — small, with grouped-query attention and enough width
// that logits are not degenerate.
nlohmann::json tiny_config(const std::string& model_type, const std::string& architecture, int layers);

// Writes a tiny but complete checkpoint for `config` (model_type decides the tensor names: llama, qwen2,
// qwen3, mistral, gemma2, gemma3_text, phi3), all weights in `dtype`.
void write_tiny_model(CheckpointWriter& w, DType dtype = DType::kF32);

}  // namespace hfs::testing
