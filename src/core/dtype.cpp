#include "hfstatic/dtype.h"

#include <array>
#include <cstdlib>
#include <limits>

#include "core/quant.h"

namespace hfs {
namespace {

struct Entry {
  DType type;
  DTypeInfo info;
};

// The registry. Q8_0: 32 int8 values + one f16 scale (34 bytes, llama.cpp-compatible block);
// Q4_0: 32 4-bit values + one f16 scale (18 bytes); their geometry is core/quant.h's, the one definition
// the exporter and the kernels use. Layouts: docs/program-format.md.
constexpr std::array<Entry, 9> kEntries{{
    {DType::kF32, {"f32", 1, 4, true}},
    {DType::kF16, {"f16", 1, 2, true}},
    {DType::kBF16, {"bf16", 1, 2, true}},
    {DType::kI32, {"i32", 1, 4, false}},
    {DType::kI64, {"i64", 1, 8, false}},
    {DType::kU8, {"u8", 1, 1, false}},
    {DType::kI8, {"i8", 1, 1, false}},
    {DType::kQ8_0, {"q8_0", quant::kQBlock, quant::kQ8Bytes, false}},
    {DType::kQ4_0, {"q4_0", quant::kQBlock, quant::kQ4Bytes, false}},
}};

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  for (const auto& e : kEntries)
    if (e.type == t) return e.info;
  std::abort();
}

std::string_view dtype_name(DType t) { return dtype_info(t).name; }

Result<DType> dtype_from_name(std::string_view name) {
  for (const auto& e : kEntries)
    if (e.info.name == name) return e.type;
  std::string known;
  for (const auto& e : kEntries) known += (known.empty() ? "" : ", ") + std::string(e.info.name);
  return make_error(ErrorCode::kInvalidArgument, "unknown dtype '" + std::string(name) + "' (known: " + known + ")");
}

std::optional<uint64_t> dtype_bytes(DType t, uint64_t numel) {
  const DTypeInfo& info = dtype_info(t);
  if (numel % info.block_elems != 0) return std::nullopt;
  uint64_t blocks = numel / info.block_elems;
  if (blocks > std::numeric_limits<uint64_t>::max() / info.block_bytes) return std::nullopt;
  return blocks * info.block_bytes;
}

}  // namespace hfs
