// gemma2: four norms per layer with (1 + w), sqrt(hidden) embedding scale, attention and final logit
// soft-capping, query_pre_attn_scalar scaling, gelu_tanh MLP; even layers slide unless layer_types says.
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_gemma2(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_TRY(gemma_skeleton(cfg, ck, "model.", /*qk_norm=*/false, &s));
  HFS_ASSIGN_OR_RETURN(double theta, rope_base(cfg, "rope_theta", 10000.0));
  s.inv_freq_global = rope_default_inv_freq(theta, s.head_dim);
  HFS_TRY(apply_rope_scaling(cfg, cfg.get("rope_scaling"), /*allow_llama3=*/false, &s.inv_freq_global));
  const size_t n = s.layers.size();
  HFS_ASSIGN_OR_RETURN(const std::optional<std::vector<LayerKind>>& from_types,
                       layer_kinds_from_config(cfg, static_cast<int64_t>(n)));
  std::vector<LayerKind> kinds(n);
  for (size_t i = 0; i < n; ++i) kinds[i] = i % 2 == 0 ? LayerKind::kSliding : LayerKind::kGlobal;
  if (from_types) kinds = *from_types;
  HFS_TRY(set_sliding_layers(cfg, kinds, &s));
  return s;
}

const bool kRegistered = register_arch("gemma2", &build_gemma2);

}  // namespace
}  // namespace hfs
