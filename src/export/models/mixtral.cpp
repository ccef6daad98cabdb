// mixtral: mistral attention (every layer slides when sliding_window is set) and a sparse MoE MLP in every
// layer (block_sparse_moe): num_local_experts experts of intermediate_size with w1/w3/w2 = gate/up/down, top
// num_experts_per_tok, the selected softmax weights always renormalized.
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_mixtral(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_TRY(decoder_skeleton(cfg, ck, LayerNaming{}, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  // MixtralConfig's defaults differ from the skeleton's.
  if (!cfg.get("rms_norm_eps")) s.rms_eps = 1e-5;
  if (!cfg.get("rope_theta")) {
    s.inv_freq_global = rope_default_inv_freq(1e6, s.head_dim);
    HFS_TRY(apply_rope_scaling(cfg, cfg.get("rope_scaling"), /*allow_llama3=*/false, &s.inv_freq_global));
  }
  const size_t n = s.layers.size();
  HFS_ASSIGN_OR_RETURN(const std::optional<std::vector<LayerKind>>& from_types,
                       layer_kinds_from_config(cfg, static_cast<int64_t>(n)));
  std::vector<LayerKind> kinds(n, cfg.get("sliding_window") ? LayerKind::kSliding : LayerKind::kGlobal);
  if (from_types) kinds = *from_types;
  HFS_TRY(set_sliding_layers(cfg, kinds, &s));
  HFS_ASSIGN_OR_RETURN(int64_t experts, expert_count(cfg, ck, "num_local_experts", 8));
  HFS_ASSIGN_OR_RETURN(int64_t top_k, cfg.int_in_or("num_experts_per_tok", 2, 1, experts, "at most num_local_experts"));
  MoeNaming naming;
  naming.module = "block_sparse_moe.";
  naming.gate = "w1";
  naming.up = "w3";
  naming.down = "w2";
  for (size_t i = 0; i < n; ++i)
    set_moe_layer(&s, "model.", static_cast<int64_t>(i), experts, top_k, s.intermediate, /*norm_topk_prob=*/true, naming);
  return s;
}

const bool kRegistered = register_arch("mixtral", &build_mixtral);

}  // namespace
}  // namespace hfs
