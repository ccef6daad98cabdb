// fuzz/targets/safetensors.h — safetensors header reader: hfs::parse_safetensors on arbitrary file bytes.
//
// A file that parses must describe tensors that lie inside it, sorted by name, with byte sizes matching
// dtype × shape, and without overlapping data ranges.
#pragma once

#include <span>

#include "common.h"
#include "hfstatic/ext/safetensors.h"

namespace hfs::fuzz {

inline std::string fuzz_safetensors(const uint8_t* data, size_t size) {
  auto tensors = parse_safetensors(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.safetensors");
  if (!tensors) return "";
  const SafetensorInfo* prev = nullptr;
  for (const SafetensorInfo& t : *tensors) {
    if (t.offset > size || t.nbytes > size - t.offset) return "tensor '" + t.name + "' data lies outside the file";
    uint64_t numel = 1;
    for (int64_t d : t.shape.dims()) {
      if (d < 0) return "tensor '" + t.name + "' has a negative dimension";
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
        return "tensor '" + t.name + "' element count overflows";
    }
    auto bytes = dtype_bytes(t.dtype, numel);
    if (!bytes || *bytes != t.nbytes) return "tensor '" + t.name + "' byte size does not match dtype x shape";
    if (prev && !(prev->name < t.name)) return "tensors not sorted by name / duplicate name '" + t.name + "'";
    prev = &t;
  }
  for (size_t i = 0; i < tensors->size(); ++i)
    for (size_t j = i + 1; j < tensors->size(); ++j) {
      const SafetensorInfo& a = (*tensors)[i];
      const SafetensorInfo& b = (*tensors)[j];
      if (a.nbytes && b.nbytes && a.offset < b.offset + b.nbytes && b.offset < a.offset + a.nbytes)
        return "tensors '" + a.name + "' and '" + b.name + "' overlap";
    }
  return "";
}

}  // namespace hfs::fuzz
