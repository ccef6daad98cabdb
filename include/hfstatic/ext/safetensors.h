// hfstatic/ext/safetensors.h — read-only access to HuggingFace safetensors checkpoints.
//
// A file is memory-mapped and its header fully validated before any tensor is handed out: the 8-byte
// header length is bounded by the file size and kMaxSafetensorsHeader, the header is strict JSON, every
// tensor has a known dtype, a shape whose byte size equals its data range, and ranges lie inside the data
// section without overlapping; no tensor (and no field of a tensor) is named twice. "__metadata__" is
// ignored. A sharded checkpoint (model.safetensors.index.json with a "weight_map") opens each shard file
// once; a tensor stored in two shards, or listed twice in the index, is an error.
//
//   auto ck = hfs::Checkpoint::open("/models/llama");            // model.safetensors or the sharded index
//   if (!ck) return ck.error();
//   const hfs::SafetensorInfo* t = (*ck)->find("model.embed_tokens.weight");   // nullptr when absent
//   hfs::Result<std::span<const std::byte>> bytes = (*ck)->data("model.embed_tokens.weight");
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// Errors: kBadCheckpoint for anything malformed (message names the file and tensor), kMissingTensor for
// a name that is not in the checkpoint, kIo for open/mmap failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/tensor.h"

namespace hfs {

// Headers beyond this are rejected before parsing (real checkpoints stay well under 10 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

struct HFS_API SafetensorInfo {
  std::string name;
  DType dtype = DType::kF32;  // F32, F16, BF16, I8, U8, I32, I64
  Shape shape;
  uint64_t offset = 0;  // absolute byte offset in the file (8 + header length + data_offsets[0])
  uint64_t nbytes = 0;
};

// Parses and validates the header of a complete safetensors file held in `file_bytes` (fuzz entry point).
// `file_name` only prefixes messages. Tensors are returned sorted by name.
[[nodiscard]] HFS_API Result<std::vector<SafetensorInfo>> parse_safetensors(std::span<const std::byte> file_bytes,
                                                                            std::string_view file_name);

// One mapped safetensors file.
class HFS_API SafetensorsFile {
 public:
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  [[nodiscard]] static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorInfo>& tensors() const { return tensors_; }
  const SafetensorInfo* find(std::string_view name) const;  // nullptr when absent
  // The tensor's bytes inside the mapping (valid while the file object lives).
  std::span<const std::byte> data(const SafetensorInfo& t) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const std::byte* map_ = nullptr;
  size_t size_ = 0;
  std::vector<SafetensorInfo> tensors_;
};

// A checkpoint directory: one file or shards, looked up by tensor name.
class HFS_API Checkpoint {
 public:
  // Opens DIR/model.safetensors, else DIR/model.safetensors.index.json and its shards.
  [[nodiscard]] static Result<std::shared_ptr<const Checkpoint>> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const SafetensorInfo* find(std::string_view name) const;  // nullptr when absent
  // Bytes of a tensor; kMissingTensor naming the tensor and directory when absent.
  [[nodiscard]] Result<std::span<const std::byte>> data(std::string_view name) const;
  // Name of the file (relative to dir) holding `name`, "" when absent.
  std::string file_of(std::string_view name) const;
  std::vector<std::string> tensor_names() const;  // sorted

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<size_t, const SafetensorInfo*>, std::less<>> index_;  // name -> (file, info)
};

}  // namespace hfs
