// Weights: what linear and embedding steps read their weights from (compile_steps.h). Packing happens
// here, once per process for a constant (shared_packed_weight), so execute() never converts a weight.
#include <functional>
#include <memory>
#include <string>

#include "backends/cpu_fast/compile_steps.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/ext/ops.h"

namespace hfs::cpu_fast {
namespace {

// Packing progress → ConstantStore::release_pages of the bytes packing has finished reading.
// `base`: where the bytes being packed start inside the constant (an expert's slice of a stacked weight).
std::function<void(uint64_t)> page_releaser(const ConstantStore* store, const std::string& name, uint64_t base = 0) {
  return [store, name, base, released = uint64_t{0}](uint64_t bytes) mutable {
    if (store != nullptr && bytes > released) store->release_pages(name, base + released, bytes - released);
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

// Expert slices [N, K] of a stacked [E, N, K] constant, each packed as pack_linear_weight packs a constant.
Status pack_moe_experts(CompileState& c, const NodeDef& node, Step& s) {
  FastDelegate& d = c.d;
  auto layer = std::make_unique<MoeLayer>();
  const TensorType& xt = d.vals[static_cast<size_t>(s.in[0])].type;
  const TensorType& gt = d.vals[static_cast<size_t>(s.in[2])].type;
  layer->experts = gt.shape[0];
  layer->inter = gt.shape[1];
  layer->hidden = gt.shape[2];
  layer->rows = xt.shape.numel() / layer->hidden;
  layer->top_k = attr_int(node.attrs, "top_k");
  layer->renorm = attr_bool(node.attrs, "norm_topk_prob", false);
  if (layer->top_k < 1 || layer->top_k > layer->experts)
    return make_error(ErrorCode::kInvalidArgument, "cpu_fast: " + s.label + ": top_k " + std::to_string(layer->top_k) +
                                                       " outside [1, " + std::to_string(layer->experts) + "]");
  std::vector<std::shared_ptr<PackedWeight>>* dst[3] = {&layer->gate, &layer->up, &layer->down};
  for (int p = 0; p < 3; ++p) {
    const Val& wv = d.vals[static_cast<size_t>(s.in[static_cast<size_t>(2 + p)])];
    const int si = 5 + p;
    const Val* sv = static_cast<size_t>(si) < s.in.size() && s.in[static_cast<size_t>(si)] >= 0
                        ? &d.vals[static_cast<size_t>(s.in[static_cast<size_t>(si)])]
                        : nullptr;
    const int64_t e_count = wv.type.shape[0], n = wv.type.shape[1], k = wv.type.shape[2];
    if (wv.kind != Val::kConst || (sv != nullptr && sv->kind != Val::kConst))
      return make_error(ErrorCode::kUnsupported, "cpu_fast: " + s.label + ": expert weight '" + wv.name +
                                                     "' and its scale must be constants (packed at load)");
    const uint64_t slice = TensorType{wv.type.dtype, {n, k}}.nbytes();
    for (int64_t e = 0; e < e_count; ++e) {
      const void* data = static_cast<const std::byte*>(wv.ptr) + static_cast<uint64_t>(e) * slice;
      const float* scale = sv != nullptr ? static_cast<const float*>(sv->ptr) + e * n : nullptr;
      std::shared_ptr<PackedWeight> packed;
      if (is_float_weight(wv.type.dtype) && !c.copy_floats) {
        HFS_ASSIGN_OR_RETURN_CTX(PackedWeight pw, pack_weight(wv.type.dtype, data, n, k, scale), "cpu_fast: " + s.label);
        packed = std::make_shared<PackedWeight>(std::move(pw));
      } else {
        HFS_ASSIGN_OR_RETURN_CTX(
            packed,
            shared_packed_weight(wv.type.dtype, data, n, k, scale,
                                 page_releaser(c.sg.constants, wv.name, static_cast<uint64_t>(e) * slice), c.pool),
            "cpu_fast: " + s.label + " expert " + std::to_string(e) + " of '" + wv.name + "'");
      }
      dst[p]->push_back(std::move(packed));
    }
  }
  HFS_TRY_CTX(layer->allocate(), "cpu_fast: " + s.label);
  s.moe = static_cast<int>(d.moes.size());
  d.moes.push_back(std::move(layer));
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
