// Float weight conversion between f32, f16 and bf16 (round to nearest even), used by constant producers,
// and the value scan that keeps non-finite weights (and values a narrower dtype cannot hold) out of programs.
//
//   HFS_TRY(hfs::convert_floats(src_bytes, hfs::DType::kBF16, dst_bytes, hfs::DType::kF16));
//   if (auto bad = hfs::first_unrepresentable(src_bytes, hfs::DType::kF32, hfs::DType::kF16)) ... bad->index
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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

// The first element of `src` (f32/f16/bf16) that is NaN or ±inf, or that rounds to ±inf when stored as
// `to` (f32 → f16 beyond 65504, f32 → bf16 near FLT_MAX, bf16 → f16 beyond 65504). Quantized targets
// (i8, q4_0) keep every finite value. nullopt when every element is fine. Memory-bound: whole blocks are
// tested branch-free and only a block that fails is searched element by element.
struct BadValue {
  size_t index = 0;  // element index in `src`
  float value = 0;   // the element as f32
  bool overflow = false;  // finite in `src`, but out of range for `to`
};
std::optional<BadValue> first_unrepresentable(std::span<const std::byte> src, DType from, DType to);

}  // namespace hfs
