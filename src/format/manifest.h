// src/format/manifest.h — the JSON manifest of a program file: encoding and strict, path-naming decoding.
//
// Decoding checks JSON shape only (required keys, kinds, no unknown keys, dtype names, rank ≤ 6, dims in
// range); byte ranges and graph rules are checked by the reader and verify_method. Errors are kBadManifest
// and name the field path, e.g. "methods[1].nodes[3].inputs[0]: expected string, got 7".
#pragma once

#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/value.h"

namespace hfs::format {

// Largest dimension accepted in a manifest shape (2^40): keeps every shape product far from overflow checks
// being the only line of defence, while any real model dimension is far below it.
inline constexpr int64_t kMaxDim = int64_t{1} << 40;

struct Manifest {
  Metadata metadata;
  std::vector<ConstantInfo> tensors;
  std::vector<MethodDef> methods;
};

Value encode_manifest(const Metadata& metadata, const std::vector<ConstantInfo>& tensors,
                      const std::vector<MethodDef>& methods);
Result<Manifest> decode_manifest(const Value& root);

}  // namespace hfs::format
