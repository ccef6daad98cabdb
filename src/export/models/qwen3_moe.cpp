// qwen3_moe: qwen3 attention (per-head q_norm/k_norm, optional attention bias, qwen2's sliding rule) with sparse
// MoE MLPs: num_experts experts of moe_intermediate_size, top num_experts_per_tok, renormalized iff
// norm_topk_prob; layers in mlp_only_layers or off the decoder_sparse_step grid keep a dense MLP
// (intermediate_size).
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_qwen3_moe(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_ASSIGN_OR_RETURN(bool bias, cfg.bool_or("attention_bias", false));
  LayerNaming n;
  n.qkv_bias = n.o_bias = bias;
  n.qk_norm = true;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  HFS_TRY(qwen_sliding_layers(cfg, &s));
  HFS_TRY(qwen_moe_layers(cfg, ck, /*shared_inter=*/0, &s));
  return s;
}

const bool kRegistered = register_arch("qwen3_moe", &build_qwen3_moe);

}  // namespace
}  // namespace hfs
