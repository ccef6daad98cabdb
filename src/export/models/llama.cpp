// llama: the reference decoder. rope_scaling may be null, default, linear or llama3; all layers global.
#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_llama(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_ASSIGN_OR_RETURN(bool bias, cfg.bool_or("attention_bias", false));
  HFS_ASSIGN_OR_RETURN(bool mlp_bias, cfg.bool_or("mlp_bias", false));
  LayerNaming n;
  n.qkv_bias = n.o_bias = bias;
  n.mlp_bias = mlp_bias;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/true, /*tie_default=*/false, &s));
  return s;
}

const bool kRegistered = register_arch("llama", &build_llama);

}  // namespace
}  // namespace hfs
