// hfstatic/dtype.h — element types and their storage geometry.
//
// A dtype is described by a registry entry: a name used in program files ("f32", "q4_0"...), and a
// block geometry. Plain types have block_elems = 1; block-quantized types pack `block_elems` values in
// `block_bytes` bytes (scales included), so the byte size of a tensor is
//   ceil(numel / block_elems) * block_bytes   (numel must be a multiple of block_elems along the last dim)
//
//   const hfs::DTypeInfo& info = hfs::dtype_info(hfs::DType::kF16);   // {"f16", 1, 2, true}
//   auto d = hfs::dtype_from_name("bf16");                            // Result<DType>
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"

namespace hfs {

enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kI32 = 3,
  kI64 = 4,
  kU8 = 5,
  kI8 = 6,
  // Block-quantized weight formats (performance work). Layouts are documented in docs/program-format.md.
  kQ8_0 = 16,  // reserved: blocks of 32 int8 + f16 scale (34 bytes), llama.cpp Q8_0 layout
  kQ4_0 = 17,  // int4, groups of 32: see format doc
};

struct HFS_API DTypeInfo {
  std::string_view name;
  uint32_t block_elems;  // values per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
  bool is_float;         // f32/f16/bf16
};

// Entry for a dtype; aborts on a value outside the enum (callers validate raw bytes with dtype_from_code).
HFS_API const DTypeInfo& dtype_info(DType t);
HFS_API std::string_view dtype_name(DType t);
HFS_API Result<DType> dtype_from_name(std::string_view name);
// Byte size of `numel` elements, or nullopt when numel is not a whole number of blocks or overflows.
HFS_API std::optional<uint64_t> dtype_bytes(DType t, uint64_t numel);

}  // namespace hfs
