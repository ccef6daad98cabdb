// hfstatic/program.h — a loaded, verified program file (.hfs).
//
// A program is model-agnostic data: metadata, a constant tensor table and fixed-shape methods. Loading
// maps the file (read() fallback), verifies every structural rule (docs/program-format.md) and exposes
// constants as zero-copy views. A Program is immutable and may be shared by many runners and threads.
//
//   auto prog = hfs::Program::load("model.hfs");
//   if (!prog) return prog.error();
//   const hfs::MethodDef* decode = (*prog)->method("decode");
//   hfs::TensorView w = *(*prog)->constant("layers.0.self_attn.q_proj.weight");
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/tensor.h"
#include "hfstatic/value.h"

namespace hfs {

inline constexpr char kProgramMagic[8] = {'H', 'F', 'S', 'T', 'A', 'T', 'I', 'C'};
inline constexpr uint32_t kProgramFormatVersion = 1;
inline constexpr uint64_t kTensorAlignment = 64;

struct HFS_API LoadOptions {
  bool use_mmap = true;  // false: read() the whole file into an aligned buffer
  bool verify = true;    // structural verification (never disable for untrusted files)
};

class HFS_API Program {
 public:
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  [[nodiscard]] static Result<std::shared_ptr<const Program>> load(const std::string& path, LoadOptions opts = {});
  // Loads from bytes (fuzzing, tests); the bytes are copied.
  [[nodiscard]] static Result<std::shared_ptr<const Program>> from_bytes(std::span<const std::byte> bytes,
                                                                          std::string name = "<memory>");

  const std::string& path() const;
  uint32_t format_version() const;
  const Metadata& metadata() const;
  const Value* meta(std::string_view key) const;  // nullptr when absent

  std::span<const ConstantInfo> constants() const;
  Result<TensorView> constant(std::string_view name) const;  // zero-copy view into the mapping
  uint64_t constant_bytes() const;                           // sum of all constant sizes
  // The bytes of a file the exporter embedded (u8 constant keys::kFilePrefix + file, e.g.
  // "tokenizer_config.json"); "" when the program carries no such file.
  std::string embedded_file(std::string_view file) const;

  std::span<const MethodDef> methods() const;
  const MethodDef* method(std::string_view name) const;  // nullptr when absent

  uint64_t file_size() const;
  bool is_mmapped() const;

 private:
  struct Impl;
  explicit Program(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The static type of every value of a method (inputs, constants it reads, node outputs), by name.
using ValueTypes = std::map<std::string, TensorType, std::less<>>;

// Structural verification of one method against the constant table (also run by Program::load and
// ProgramWriter::write). Checks definitions before use, single definition, execution order and cycles,
// unknown ops/attributes, operand counts, shape rules, outputs produced, aliases, use after in-place
// update (rules and error codes: docs/program-format.md). `types` (optional) receives the type of every
// value on success. Messages are prefixed "method 'decode' node 12 (rope): ".
[[nodiscard]] HFS_API Status verify_method(const MethodDef& method, std::span<const ConstantInfo> constants,
                                           ValueTypes* types = nullptr);

}  // namespace hfs
