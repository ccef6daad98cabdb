// src/format/checks.h — overflow-safe size arithmetic shared by the reader, verifier and writer.
#pragma once

#include <cstdint>
#include <optional>

#include "hfstatic/tensor.h"

namespace hfs::format {

// Largest element count accepted for any tensor type (2^53): far above any real tensor, and small enough
// that byte sizes of every dtype fit in 64 bits.
inline constexpr uint64_t kMaxNumel = uint64_t{1} << 53;

// numel of a shape, or nullopt when a dim is negative or the product exceeds kMaxNumel.
inline std::optional<uint64_t> checked_numel(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s.dims()) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kMaxNumel / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

// Byte size of a type, or nullopt (bad dims, too large, or not a whole number of blocks). Blocks of
// block-quantized types run along the last dimension, so that dimension must be a multiple of the block.
inline std::optional<uint64_t> checked_nbytes(const TensorType& t) {
  auto n = checked_numel(t.shape);
  if (!n) return std::nullopt;
  const uint32_t block = dtype_info(t.dtype).block_elems;
  if (block > 1 && (t.shape.rank() == 0 || t.shape[t.shape.rank() - 1] % block != 0)) return std::nullopt;
  return dtype_bytes(t.dtype, *n);
}

}  // namespace hfs::format
