// qwen2: llama with q/k/v biases; layer i slides iff use_sliding_window && i >= max_window_layers
// (or as layer_types says).
#include "export/model_spec.h"

namespace hfs {

// Declared in model_spec.h: qwen3 uses the same rule.
Status qwen_sliding_layers(const HfConfig& cfg, ModelSpec* s) {
  const int64_t n = static_cast<int64_t>(s->layers.size());
  HFS_ASSIGN_OR_RETURN(const std::optional<std::vector<LayerKind>>& from_types, layer_kinds_from_config(cfg, n));
  std::vector<LayerKind> kinds(static_cast<size_t>(n), LayerKind::kGlobal);
  if (from_types) {
    kinds = *from_types;
  } else {
    HFS_ASSIGN_OR_RETURN(bool use, cfg.bool_or("use_sliding_window", false));
    // Layers from max_window_layers on slide; a count beyond the layers means none do.
    HFS_ASSIGN_OR_RETURN(int64_t max_window_layers, cfg.int_in_or("max_window_layers", n, 0, INT64_MAX));
    if (use)
      for (int64_t i = max_window_layers; i < n; ++i) kinds[static_cast<size_t>(i)] = LayerKind::kSliding;
  }
  return set_sliding_layers(cfg, kinds, s);
}

namespace {

Result<ModelSpec> build_qwen2(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  LayerNaming n;
  n.qkv_bias = true;
  HFS_TRY(decoder_skeleton(cfg, ck, n, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  HFS_TRY(qwen_sliding_layers(cfg, &s));
  return s;
}

const bool kRegistered = register_arch("qwen2", &build_qwen2);

}  // namespace
}  // namespace hfs
