// gemma3 text decoder (model_type gemma3_text, or the text part of a multimodal gemma3 via text_config):
// gemma2's layer plus q/k norms; layer i slides iff (i + 1) % sliding_window_pattern != 0 (or layer_types);
// sliding layers use rope_local_base_freq, global ones rope_theta with optional linear rope_scaling.
#include "export/model_spec.h"

namespace hfs {
namespace {

// Gemma3TextConfig defaults: multimodal checkpoints store a sparse text_config.
void fill_text_defaults(HfConfig* cfg) {
  const std::pair<const char*, Value> defaults[] = {
      {"vocab_size", Value(262208)},          {"hidden_size", Value(2304)},
      {"intermediate_size", Value(9216)},     {"num_hidden_layers", Value(26)},
      {"num_attention_heads", Value(8)},      {"num_key_value_heads", Value(4)},
      {"head_dim", Value(256)},               {"max_position_embeddings", Value(131072)},
      {"rms_norm_eps", Value(1e-6)},          {"rope_theta", Value(1000000.0)},
      {"query_pre_attn_scalar", Value(256)},  {"sliding_window", Value(4096)},
      {"rope_local_base_freq", Value(10000.0)}, {"sliding_window_pattern", Value(6)},
  };
  for (const auto& [k, v] : defaults)
    if (!cfg->text.get(k)) cfg->text.set(k, v);
}

Result<ModelSpec> build_gemma3(const HfConfig& in_cfg, const Checkpoint& ck) {
  HfConfig cfg = in_cfg;
  fill_text_defaults(&cfg);
  // Decoder weights: text-only checkpoints use "model."; multimodal ones nest the language model.
  std::string prefix = "model.";
  for (const char* p : {"model.", "language_model.model.", "model.language_model."})
    if (ck.find(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      break;
    }
  ModelSpec s;
  HFS_TRY(gemma_skeleton(cfg, ck, prefix, /*qk_norm=*/true, &s));
  if (s.lm_head.name != s.embed.name && prefix != "model.")  // untied multimodal: the head sits beside the decoder
    s.lm_head.source = prefix == "language_model.model." ? "language_model.lm_head.weight" : "lm_head.weight";

  HFS_ASSIGN_OR_RETURN(double theta, rope_base(cfg, "rope_theta", 1000000.0));
  HFS_ASSIGN_OR_RETURN(double local, rope_base(cfg, "rope_local_base_freq", 10000.0));
  s.inv_freq_global = rope_default_inv_freq(theta, s.head_dim);
  HFS_TRY(apply_rope_scaling(cfg, cfg.get("rope_scaling"), /*allow_llama3=*/false, &s.inv_freq_global));
  s.inv_freq_sliding = rope_default_inv_freq(local, s.head_dim);

  const size_t n = s.layers.size();
  HFS_ASSIGN_OR_RETURN(const std::optional<std::vector<LayerKind>>& from_types,
                       layer_kinds_from_config(cfg, static_cast<int64_t>(n)));
  std::vector<LayerKind> kinds(n);
  if (from_types) {
    kinds = *from_types;
  } else {
    HFS_ASSIGN_OR_RETURN(int64_t pattern, cfg.int_in_or("sliding_window_pattern", 6, 1, INT64_MAX));
    for (size_t i = 0; i < n; ++i)
      kinds[i] = (static_cast<int64_t>(i) + 1) % pattern != 0 ? LayerKind::kSliding : LayerKind::kGlobal;
  }
  HFS_TRY(set_sliding_layers(cfg, kinds, &s));
  return s;
}

const bool kRegText = register_arch("gemma3_text", &build_gemma3);
const bool kRegMultimodal = register_arch("gemma3", &build_gemma3);

}  // namespace
}  // namespace hfs
