// Test support: tiny safetensors checkpoints written byte by byte (independent of the reader under test).
#include "support/checkpoint_writer.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace hfs::testing {
namespace {

uint16_t to_f16(float f) {  // simple RNE encoder for normal-range test values, ±inf and NaN
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs < 0x38800000u) return static_cast<uint16_t>(sign);  // tests never need f16 subnormals
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u) - (112u << 23);
  return static_cast<uint16_t>(sign | (r >> 13));
}

uint16_t to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

const char* st_name(DType t) {
  switch (t) {
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default: return "F32";
  }
}

}  // namespace

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return v;
}

TestTensor make_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  TestTensor t{name, st_name(dtype), std::move(shape), {}};
  for (float f : values) {
    if (dtype == DType::kF32) {
      uint8_t b[4];
      std::memcpy(b, &f, 4);
      t.bytes.insert(t.bytes.end(), b, b + 4);
    } else {
      uint16_t h = dtype == DType::kF16 ? to_f16(f) : to_bf16(f);
      t.bytes.push_back(static_cast<uint8_t>(h & 0xff));
      t.bytes.push_back(static_cast<uint8_t>(h >> 8));
    }
  }
  return t;
}

std::string safetensors_header(const std::vector<TestTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t off = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.st_dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  return h.dump();
}

std::vector<uint8_t> safetensors_bytes(const std::vector<TestTensor>& tensors, const std::string& header_override) {
  std::string header = header_override.empty() ? safetensors_header(tensors) : header_override;
  std::vector<uint8_t> out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (const auto& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("hfs_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + tag);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

std::vector<float> CheckpointWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  auto v = random_values(n, static_cast<uint32_t>(tensors_.size() + 1));
  add(name, dtype, std::move(shape), v);
  return v;
}

void CheckpointWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  remove(name);
  tensors_.push_back(make_tensor(name, dtype, std::move(shape), values));
}

void CheckpointWriter::add_raw(TestTensor t) {
  remove(t.name);
  tensors_.push_back(std::move(t));
}

void CheckpointWriter::remove(const std::string& name) {
  std::erase_if(tensors_, [&](const TestTensor& t) { return t.name == name; });
}

void CheckpointWriter::write(int shards) const {
  write_text(dir_ + "/config.json", config.dump(2));
  if (!generation_config.is_null()) write_text(dir_ + "/generation_config.json", generation_config.dump(2));
  if (shards <= 1) {
    write_bytes(dir_ + "/model.safetensors", safetensors_bytes(tensors_));
    return;
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
    std::vector<TestTensor> part;
    for (size_t i = static_cast<size_t>(s); i < tensors_.size(); i += static_cast<size_t>(shards)) {
      part.push_back(tensors_[i]);
      index["weight_map"][tensors_[i].name] = name;
    }
    write_bytes(dir_ + "/" + name, safetensors_bytes(part));
  }
  write_text(dir_ + "/model.safetensors.index.json", index.dump(2));
}

void write_tiny_model(CheckpointWriter& w, DType dtype) {
  const nlohmann::json& c = w.config;
  const nlohmann::json& t = c.contains("text_config") ? c["text_config"] : c;
  const std::string mt = c["model_type"];
  const int64_t H = t["hidden_size"], L = t["num_hidden_layers"], Hq = t["num_attention_heads"];
  const int64_t Hkv = t.value("num_key_value_heads", Hq);
  const int64_t D = t.contains("head_dim") && !t["head_dim"].is_null() ? t["head_dim"].get<int64_t>() : H / Hq;
  const int64_t I = t["intermediate_size"], V = t["vocab_size"];
  const bool gemma = mt.rfind("gemma", 0) == 0;
  const bool tied = t.value("tie_word_embeddings", gemma);
  const std::string prefix = mt == "gemma3" ? "language_model.model." : "model.";
  w.add(prefix + "embed_tokens.weight", dtype, {V, H});
  w.add(prefix + "norm.weight", dtype, {H});
  if (!tied) w.add(mt == "gemma3" ? "language_model.lm_head.weight" : "lm_head.weight", dtype, {V, H});
  for (int64_t i = 0; i < L; ++i) {
    const std::string l = prefix + "layers." + std::to_string(i) + ".";
    w.add(l + "input_layernorm.weight", dtype, {H});
    w.add(l + "post_attention_layernorm.weight", dtype, {H});
    if (mt == "phi3") {
      w.add(l + "self_attn.qkv_proj.weight", dtype, {(Hq + 2 * Hkv) * D, H});
      w.add(l + "mlp.gate_up_proj.weight", dtype, {2 * I, H});
    } else {
      w.add(l + "self_attn.q_proj.weight", dtype, {Hq * D, H});
      w.add(l + "self_attn.k_proj.weight", dtype, {Hkv * D, H});
      w.add(l + "self_attn.v_proj.weight", dtype, {Hkv * D, H});
      w.add(l + "mlp.gate_proj.weight", dtype, {I, H});
      w.add(l + "mlp.up_proj.weight", dtype, {I, H});
    }
    w.add(l + "self_attn.o_proj.weight", dtype, {H, Hq * D});
    w.add(l + "mlp.down_proj.weight", dtype, {H, I});
    if (mt == "qwen2") {
      w.add(l + "self_attn.q_proj.bias", dtype, {Hq * D});
      w.add(l + "self_attn.k_proj.bias", dtype, {Hkv * D});
      w.add(l + "self_attn.v_proj.bias", dtype, {Hkv * D});
    }
    if (mt == "qwen3" || mt.rfind("gemma3", 0) == 0) {
      w.add(l + "self_attn.q_norm.weight", dtype, {D});
      w.add(l + "self_attn.k_norm.weight", dtype, {D});
    }
    if (gemma) {
      w.add(l + "pre_feedforward_layernorm.weight", dtype, {H});
      w.add(l + "post_feedforward_layernorm.weight", dtype, {H});
    }
  }
}

nlohmann::json tiny_config(const std::string& model_type, const std::string& architecture, int layers) {
  return {{"model_type", model_type},
          {"architectures", {architecture}},
          {"vocab_size", 512},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", layers},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"max_position_embeddings", 4096},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"tie_word_embeddings", false},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"torch_dtype", "float32"}};
}

}  // namespace hfs::testing
