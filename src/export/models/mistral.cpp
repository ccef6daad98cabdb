// mistral: llama layout; every layer slides when sliding_window is set (null → all global).
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_mistral(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_TRY(decoder_skeleton(cfg, ck, LayerNaming{}, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  const size_t n = s.layers.size();
  HFS_ASSIGN_OR_RETURN(const std::optional<std::vector<LayerKind>>& from_types,
                       layer_kinds_from_config(cfg, static_cast<int64_t>(n)));
  std::vector<LayerKind> kinds(n, cfg.get("sliding_window") ? LayerKind::kSliding : LayerKind::kGlobal);
  if (from_types) kinds = *from_types;
  HFS_TRY(set_sliding_layers(cfg, kinds, &s));
  return s;
}

const bool kRegistered = register_arch("mistral", &build_mistral);

}  // namespace
}  // namespace hfs
