// qwen2_moe: qwen2 attention (q/k/v bias) with sparse MoE MLPs as qwen3_moe (top-k weights renormalized only
// when norm_topk_prob), plus a shared expert of shared_expert_intermediate_size behind
// sigmoid(shared_expert_gate(x)), added to the routed experts' sum.
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_qwen2_moe(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_ASSIGN_OR_RETURN(bool bias, cfg.bool_or("qkv_bias", true));
  LayerNaming n;
  n.qkv_bias = bias;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  HFS_TRY(qwen_sliding_layers(cfg, &s));
  HFS_ASSIGN_OR_RETURN(int64_t shared, cfg.int_in("shared_expert_intermediate_size", 1, INT64_MAX));
  HFS_TRY(qwen_moe_layers(cfg, ck, shared, &s));
  return s;
}

const bool kRegistered = register_arch("qwen2_moe", &build_qwen2_moe);

}  // namespace
}  // namespace hfs
