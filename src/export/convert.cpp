// f32/f16/bf16 conversion with IEEE round-to-nearest-even (NaN stays NaN, overflow becomes inf).
#include "export/convert.h"

#include <cstring>
#include <string>

namespace hfs {

float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to ≥ 65520 → inf
  if (abs < 0x38800000u) {  // below the smallest normal f16 (2^-14): subnormal or zero
    if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to zero
    uint32_t e = abs >> 23;
    uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // value = man * 2^(e-150); f16 subnormal unit 2^-24 → man >> (126 - e)
    uint32_t q = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even on the 13 dropped bits
  r -= 0x38000000u;                                 // rebias 127 → 15
  return static_cast<uint16_t>(sign | (r >> 13));
}

float bf16_bits_to_f32(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

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
