// Float weight conversion between f32, f16 and bf16 (round to nearest even), used by constant producers.
//
//   HFS_TRY(hfs::convert_floats(src_bytes, hfs::DType::kBF16, dst_bytes, hfs::DType::kF16));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"

namespace hfs {

float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_f16_bits(float f);
float bf16_bits_to_f32(uint16_t b);
uint16_t f32_to_bf16_bits(float f);

// Converts a contiguous run of elements; `src` and `dst` must hold the same element count.
[[nodiscard]] Status convert_floats(std::span<const std::byte> src, DType from, std::span<std::byte> dst, DType to);

}  // namespace hfs
