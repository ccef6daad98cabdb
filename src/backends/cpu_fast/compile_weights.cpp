// Weights: what linear and embedding steps read their weights from (compile_steps.h). Packing happens
// here, once per process for a constant (shared_packed_weight), so execute() never converts a weight.
#include <functional>
#include <memory>
#include <string>

#include "backends/cpu_fast/compile_steps.h"
#include "hfstatic/ext/method.h"

namespace hfs::cpu_fast {
namespace {

// Packing progress → ConstantStore::release_pages of the bytes packing has finished reading.
std::function<void(uint64_t)> page_releaser(const ConstantStore* store, const std::string& name) {
  return [store, name, released = uint64_t{0}](uint64_t bytes) mutable {
    if (store != nullptr && bytes > released) store->release_pages(name, released, bytes - released);
    released = bytes;
  };
}

}  // namespace

Status pack_linear_weight(CompileState& c, Step& s) {
  FastDelegate& d = c.d;
  const Val& wv = d.vals[static_cast<size_t>(s.in[1])];
  const int64_t n = wv.type.shape[0], k = wv.type.shape[1];
  const float* scale = nullptr;
  if (wv.type.dtype == DType::kI8) {
    const Val& sv = d.vals[static_cast<size_t>(s.in[3])];
    if (sv.kind != Val::kConst || sv.type.shape.numel() != n)
      return make_error(ErrorCode::kUnsupported, "cpu_fast: " + s.label + ": i8 weight scale '" + sv.name +
                                                     "' must be a constant of " + std::to_string(n) + " floats");
    scale = static_cast<const float*>(sv.ptr);
  }
  const bool is_const = wv.kind == Val::kConst;
  if (!is_const && !is_float_weight(wv.type.dtype))
    return make_error(ErrorCode::kUnsupported, "cpu_fast: " + s.label + ": " + std::string(dtype_name(wv.type.dtype)) +
                                                   " weight '" + wv.name + "' must be a constant (packed at load)");
  std::shared_ptr<PackedWeight> packed;
  if (!is_const || (is_float_weight(wv.type.dtype) && !c.copy_floats)) {
    // Float weights read in place: a runtime one gets its pointer per execute (a placeholder keeps
    // pack_weight happy); a constant whose pages would stay resident is not worth a second copy.
    static const float kPlaceholder = 0;
    HFS_ASSIGN_OR_RETURN_CTX(PackedWeight pw,
                             pack_weight(wv.type.dtype, is_const ? wv.ptr : &kPlaceholder, n, k, scale),
                             "cpu_fast: " + s.label);
    packed = std::make_shared<PackedWeight>(std::move(pw));
  } else {
    // Only the packed copy (for float weights: the copy on huge pages) is read from now on: a
    // file-mapped program drops the original's pages as packing moves through it, so peak RSS holds
    // one copy of the weights, not two.
    HFS_ASSIGN_OR_RETURN_CTX(
        std::shared_ptr<PackedWeight> pw,
        shared_packed_weight(wv.type.dtype, wv.ptr, n, k, scale, page_releaser(c.sg.constants, wv.name), c.pool),
        "cpu_fast: " + s.label);
    packed = std::move(pw);
  }
  s.weight = static_cast<int>(d.weights.size());
  d.weights.push_back(std::move(packed));
  d.weight_runtime_value.push_back(is_const ? -1 : s.in[1]);
  return Ok{};
}

// An i8 or float embedding gathers its rows from the table's packed copy — the one a tied LM head uses
// (packing is shared process-wide, whichever delegate comes first packs): packing releases the table's
// pages, and gathering from the original would fault them back in (~20 µs per new token's page, and RSS
// creeping toward a second copy of the table over a long generation).
Status pack_embedding_tables(CompileState& c) {
  FastDelegate& d = c.d;
  for (Step& s : d.steps) {
    if (s.op != Op::kEmbedding || s.in.empty()) continue;
    const Val& table = d.vals[static_cast<size_t>(s.in[0])];
    if (table.kind != Val::kConst || table.type.shape.rank() != 2) continue;
    const float* scale_ptr = nullptr;
    if (table.type.dtype == DType::kI8) {
      if (s.in.size() < 3 || s.in[2] < 0) continue;
      const Val& scale = d.vals[static_cast<size_t>(s.in[2])];
      if (scale.kind != Val::kConst || scale.type.shape.numel() != table.type.shape[0]) continue;
      scale_ptr = static_cast<const float*>(scale.ptr);
    } else if (!is_float_weight(table.type.dtype) || !c.copy_floats) {
      continue;
    }
    HFS_ASSIGN_OR_RETURN_CTX(std::shared_ptr<PackedWeight> pw,
                             shared_packed_weight(table.type.dtype, table.ptr, table.type.shape[0], table.type.shape[1],
                                                  scale_ptr, page_releaser(c.sg.constants, table.name), c.pool),
                             "cpu_fast: " + s.label);
    s.weight = static_cast<int>(d.weights.size());
    d.weights.push_back(std::move(pw));
    d.weight_runtime_value.push_back(-1);
  }
  return Ok{};
}

}  // namespace hfs::cpu_fast
