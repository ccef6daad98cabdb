// Method building: the nodes and I/O signature of one hf_static method (prefill, decode, a prefill_<T>
// variant or a step_<T> method) from a ModelSpec. Internal to the exporter; plan_assembly.cpp calls it once per
// method. Builds names and shapes only: it reads no checkpoint and cannot fail (the spec, the geometry and
// the weights were checked before).
//
//   MethodDef decode = hfs::build_method("decode", 1, false, spec, geometry, options, rope, weights.stored);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "export/model_spec.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/graph.h"

namespace hfs {

// The sizes every method of one program shares.
struct Geometry {
  int64_t chunk = 0;      // C, the prefill method's tokens
  int64_t context = 0;    // N, one sequence's capacity in tokens
  int64_t sequences = 1;  // sequences sharing the caches
  int64_t pool = 0;       // the global layers' cache length: N with one sequence, else the slot pool
  int64_t window = 0;     // W, clamped to the context (0 when no layer slides)
  int64_t ring = 0;       // R = min(W + T_max - 1, N), one sequence's sliding ring (0 when none)
  std::vector<int64_t> steps;  // the step_<T> methods' T, ascending
  bool has_global = false, has_sliding = false;
  int64_t cache_len(LayerKind k) const { return k == LayerKind::kSliding ? sequences * ring : pool; }
};

// The RoPE frequency constants each layer kind reads (one constant when both kinds share frequencies).
struct RopeTables {
  std::string global = "rope.inv_freq";
  std::string sliding = "rope.inv_freq";
};

// Method `name` taking `tokens` tokens per call; all_rows: logits for every row, else only for the row
// logits_index names. `stored` maps each weight constant to its stored dtype: i8 linears and embeddings
// read a "<weight>.scale" operand too.
MethodDef build_method(const std::string& name, int64_t tokens, bool all_rows, const ModelSpec& spec,
                       const Geometry& geometry, const ExportOptions& options, const RopeTables& rope,
                       const std::map<std::string, DType>& stored);

}  // namespace hfs
