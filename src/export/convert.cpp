// f32/f16/bf16 conversion with IEEE round-to-nearest-even (NaN stays NaN, overflow becomes inf).
#include "export/convert.h"

#include "core/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
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

namespace hfs {
namespace {

template <typename T>
T load_bits(const std::byte* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

// Index of the first element `bad` accepts. Blocks are OR-reduced without branches (the compiler
// vectorizes that loop); only a block holding a hit is walked again to find it.
template <typename T, typename Pred>
std::optional<size_t> first_match(const std::byte* p, size_t n, Pred bad) {
  constexpr size_t kBlock = 4096;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    unsigned any = 0;
    for (size_t i = b; i < e; ++i) any |= bad(load_bits<T>(p, i)) ? 1u : 0u;
    if (!any) continue;
    for (size_t i = b; i < e; ++i)
      if (bad(load_bits<T>(p, i))) return i;
  }
  return std::nullopt;
}

// |x| bit patterns at or above which a value is unusable in `to`: ±inf/NaN always; the smallest magnitude
// that rounds to inf when narrowed (f32_to_f16: 65520 = 65504 + half an ulp; f32_to_bf16: the tie just
// below 2^128 rounds up to inf).
uint32_t abs_bits_limit(DType from, DType to) {
  constexpr uint32_t kInf = 0x7F800000u, kF16Overflow = 0x477FF000u, kBF16Overflow = 0x7F7F8000u;
  if (to == DType::kF16 && from != DType::kF16) return kF16Overflow;
  if (to == DType::kBF16 && from == DType::kF32) return kBF16Overflow;
  return kInf;
}

float element_as_f32(const std::byte* p, size_t i, DType t) {
  switch (t) {
    case DType::kF16: return f16_bits_to_f32(load_bits<uint16_t>(p, i));
    case DType::kBF16: return bf16_bits_to_f32(load_bits<uint16_t>(p, i));
    default: return std::bit_cast<float>(load_bits<uint32_t>(p, i));
  }
}

}  // namespace

std::optional<BadValue> first_unrepresentable(std::span<const std::byte> src, DType from, DType to) {
  const uint32_t limit = abs_bits_limit(from, to);
  std::optional<size_t> hit;
  switch (from) {
    case DType::kF32:
      hit = first_match<uint32_t>(src.data(), src.size() / 4, [limit](uint32_t x) { return (x & 0x7FFFFFFFu) >= limit; });
      break;
    case DType::kBF16: {  // bf16 is the top half of f32: compare 16-bit patterns, (h << 16) ≥ limit
      const auto limit16 = static_cast<uint16_t>((limit + 0xFFFFu) >> 16);
      hit = first_match<uint16_t>(src.data(), src.size() / 2,
                                  [limit16](uint16_t h) { return static_cast<uint16_t>(h & 0x7FFFu) >= limit16; });
      break;
    }
    case DType::kF16:  // every finite f16 fits f32, bf16 and f16
      hit = first_match<uint16_t>(src.data(), src.size() / 2, [](uint16_t h) { return (h & 0x7C00u) == 0x7C00u; });
      break;
    default: return std::nullopt;
  }
  if (!hit) return std::nullopt;
  BadValue b;
  b.index = *hit;
  b.value = element_as_f32(src.data(), *hit, from);
  b.overflow = std::isfinite(b.value);
  return b;
}

}  // namespace hfs
