// Weight planning: which dtype each weight of a ModelSpec is stored in and how its bytes are produced
// when the file is written (copied, converted or quantized with core/quant.h). Internal to the exporter;
// plan_assembly.cpp calls it.
//
//   auto weights = hfs::plan_weights(spec, cfg, ckpt, options);   // checks every weight, reads no data
//   ... weights->constants, weights->stored.at("model.embed_tokens.weight") ...
//   HFS_TRY(hfs::check_weight_values(*ckpt, weights->value_checks));   // the one pass over the data
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "export/hf_config.h"
#include "export/model_spec.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/safetensors.h"

namespace hfs {

struct WeightPlan {
  std::vector<PlannedConstant> constants;  // every weight once (a tied LM head is the embedding), i8 scales after their weight
  std::map<std::string, DType> stored;     // constant name → stored dtype (i8 linears and embeddings take a scale)
  DType embed_dtype = DType::kF32;         // the embedding table's stored dtype (general.weights for float modes)
  int64_t n_params = 0;                    // elements of the distinct weights
  // Each (checkpoint tensor, stored dtype) once, in spec order: what check_weight_values must read.
  std::vector<std::pair<std::string, DType>> value_checks;
};

// Checks every weight of `spec` against the checkpoint (presence, shape, float dtype, row ranges) before
// planning any of them, so a bad checkpoint fails before anything is produced, and picks each stored dtype
// from options.weights. Reads tensor headers only.
[[nodiscard]] Result<WeightPlan> plan_weights(const ModelSpec& spec, const HfConfig& cfg,
                                              const std::shared_ptr<const Checkpoint>& ckpt, const ExportOptions& options);

}  // namespace hfs
