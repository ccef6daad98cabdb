// olmoe: llama-like attention whose q_norm/k_norm are RMSNorms over the whole q/k projection (hidden_size and
// num_key_value_heads × head_dim wide, before the head split), optional attention bias, clip_qkv only null;
// a sparse MoE MLP in every layer: num_experts experts of intermediate_size, top num_experts_per_tok,
// renormalized iff norm_topk_prob (default false).
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_olmoe(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_ASSIGN_OR_RETURN(bool bias, cfg.bool_or("attention_bias", false));
  LayerNaming n;
  n.qkv_bias = n.o_bias = bias;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  if (const Value* clip = cfg.get("clip_qkv"))
    return cfg.unsupported("clip_qkv", clip->to_json() + " (only null is supported)");
  if (!cfg.get("rms_norm_eps")) s.rms_eps = 1e-5;  // OlmoeConfig's default
  HFS_ASSIGN_OR_RETURN(int64_t experts, expert_count(cfg, ck, "num_experts", 64));
  HFS_ASSIGN_OR_RETURN(int64_t top_k, cfg.int_in_or("num_experts_per_tok", 8, 1, experts, "at most num_experts"));
  HFS_ASSIGN_OR_RETURN(bool norm, cfg.bool_or("norm_topk_prob", false));
  using R = WeightRef::Role;
  const int64_t q_out = s.n_heads * s.head_dim, kv_out = s.n_kv_heads * s.head_dim;
  for (size_t i = 0; i < s.layers.size(); ++i) {
    LayerSpec& L = s.layers[i];
    const std::string l = "layers." + std::to_string(i) + ".self_attn.";
    L.q_norm = weight_ref("model.", l + "q_norm.weight", {q_out}, R::kNorm, "[num_attention_heads × head_dim]");
    L.k_norm = weight_ref("model.", l + "k_norm.weight", {kv_out}, R::kNorm, "[num_key_value_heads × head_dim]");
    L.qk_norm_full = true;
    set_moe_layer(&s, "model.", static_cast<int64_t>(i), experts, top_k, s.intermediate, norm, MoeNaming{});
  }
  return s;
}

const bool kRegistered = register_arch("olmoe", &build_olmoe);

}  // namespace
}  // namespace hfs
