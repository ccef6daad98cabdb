// qwen3: llama with per-head q_norm/k_norm (rms_norm over head_dim before RoPE), optional attention bias,
// qwen2's sliding rule.
#include "export/model_spec.h"

namespace hfs {

namespace {

Result<ModelSpec> build_qwen3(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_ASSIGN_OR_RETURN(bool bias, cfg.bool_or("attention_bias", false));
  LayerNaming n;
  n.qkv_bias = n.o_bias = bias;
  n.qk_norm = true;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  HFS_TRY(qwen_sliding_layers(cfg, &s));
  return s;
}

const bool kRegistered = register_arch("qwen3", &build_qwen3);

}  // namespace
}  // namespace hfs
