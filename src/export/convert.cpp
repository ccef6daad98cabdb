// f32/f16/bf16 conversion with IEEE round-to-nearest-even (NaN stays NaN, overflow becomes inf).
#include "export/convert.h"

#include "core/half.h"

#include <cstring>
#include <string>

namespace hfs {

// One implementation of the bit conversions for the whole library: src/core/half.h.
float f16_bits_to_f32(uint16_t h) { return f16_to_f32(h); }
uint16_t f32_to_f16_bits(float f) { return f32_to_f16(f); }
float bf16_bits_to_f32(uint16_t b) { return bf16_to_f32(b); }
uint16_t f32_to_bf16_bits(float f) { return f32_to_bf16(f); }

namespace {

float load(const std::byte* p, DType t) {
  uint16_t h;
  float f;
  switch (t) {
    case DType::kF16: std::memcpy(&h, p, 2); return f16_bits_to_f32(h);
    case DType::kBF16: std::memcpy(&h, p, 2); return bf16_bits_to_f32(h);
    default: std::memcpy(&f, p, 4); return f;
  }
}

void store(std::byte* p, DType t, float f) {
  uint16_t h;
  switch (t) {
    case DType::kF16: h = f32_to_f16_bits(f); std::memcpy(p, &h, 2); return;
    case DType::kBF16: h = f32_to_bf16_bits(f); std::memcpy(p, &h, 2); return;
    default: std::memcpy(p, &f, 4); return;
  }
}

bool is_convertible(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace

Status convert_floats(std::span<const std::byte> src, DType from, std::span<std::byte> dst, DType to) {
  if (!is_convertible(from) || !is_convertible(to))
    return make_error(ErrorCode::kInvalidArgument, "convert: only f32/f16/bf16 are convertible, got " +
                                                       std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
  const size_t in_size = dtype_info(from).block_bytes, out_size = dtype_info(to).block_bytes;
  if (src.size() % in_size != 0 || src.size() / in_size != dst.size() / out_size || dst.size() % out_size != 0)
    return make_error(ErrorCode::kInternal, "convert: " + std::to_string(src.size()) + " bytes of " +
                                                std::string(dtype_name(from)) + " do not fill " + std::to_string(dst.size()) +
                                                " bytes of " + std::string(dtype_name(to)));
  if (from == to) {
    std::memcpy(dst.data(), src.data(), src.size());
    return Ok{};
  }
  const size_t n = src.size() / in_size;
  for (size_t i = 0; i < n; ++i) store(dst.data() + i * out_size, to, load(src.data() + i * in_size, from));
  return Ok{};
}

}  // namespace hfs
