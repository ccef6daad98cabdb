// Method building: the nodes and I/O signature of one hf_static v1 method (prefill, decode or a
// prefill_<T> variant) from a ModelSpec. Internal to the exporter; plan_assembly.cpp calls it once per
// method. Builds names and shapes only: it reads no checkpoint and cannot fail (the spec, the geometry and
// the weights were checked before).
//
//   MethodDef decode = hfs::build_method("decode", 1, spec, geometry, options, rope, weights.stored);
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "export/model_spec.h"
#include "hfstatic/export.h"
#include "hfstatic/graph.h"

namespace hfs {

// The sizes every method of one program shares.
struct Geometry {
  int64_t chunk = 0;    // C, the prefill method's tokens
  int64_t context = 0;  // S_global, the global layers' cache length
  int64_t window = 0;   // W, clamped to the context (0 when no layer slides)
  int64_t ring = 0;     // R = min(W + C - 1, context), the sliding layers' cache length (0 when none)
  bool has_global = false, has_sliding = false;
  int64_t cache_len(LayerKind k) const { return k == LayerKind::kSliding ? ring : context; }
};

// The RoPE frequency constants each layer kind reads (one constant when both kinds share frequencies).
struct RopeTables {
  std::string global = "rope.inv_freq";
  std::string sliding = "rope.inv_freq";
};

// Method `name` taking `tokens` tokens per call. `stored` maps each weight constant to its stored dtype:
// i8 linears and embeddings read a "<weight>.scale" operand too.
MethodDef build_method(const std::string& name, int64_t tokens, const ModelSpec& spec, const Geometry& geometry,
                       const ExportOptions& options, const RopeTables& rope, const std::map<std::string, DType>& stored);

}  // namespace hfs
