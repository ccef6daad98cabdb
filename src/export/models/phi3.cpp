// phi3: fused qkv_proj (rows q | k | v) and gate_up_proj (rows gate | up) split at export; partial rotary
// (partial_rotary_factor); every layer slides when sliding_window is set; rope_scaling must be null
// (longrope/su are not supported).
#include <cmath>

#include "export/model_spec.h"

namespace hfs {
namespace {

Result<ModelSpec> build_phi3(const HfConfig& cfg, const Checkpoint& ck) {
  ModelSpec s;
  HFS_TRY(decoder_skeleton(cfg, ck, LayerNaming{}, /*allow_llama3=*/false, /*tie_default=*/false, &s));
  if (const Value* rs = cfg.get("rope_scaling"))
    return cfg.unsupported("rope_scaling", "phi3 rope scaling " + rs->to_json() + " (only null is supported)");
  HFS_ASSIGN_OR_RETURN(double prf, cfg.positive_or("partial_rotary_factor", 1.0, 1.0));
  const auto rotary_dim = static_cast<int64_t>(std::floor(static_cast<double>(s.head_dim) * prf));
  if (rotary_dim < 2 || rotary_dim % 2 != 0)
    return cfg.bad_value("partial_rotary_factor", "gives rotary dim " + std::to_string(rotary_dim) + " for head_dim " +
                                                      std::to_string(s.head_dim) + " (need an even value in [2, head_dim])");
  HFS_ASSIGN_OR_RETURN(double theta, rope_base(cfg, "rope_theta", 10000.0));
  s.inv_freq_global = rope_default_inv_freq(theta, rotary_dim);

  const int64_t q_rows = s.n_heads * s.head_dim, kv_rows = s.n_kv_heads * s.head_dim;
  const Shape qkv_shape{q_rows + 2 * kv_rows, s.hidden}, gate_up_shape{2 * s.intermediate, s.hidden};
  for (size_t i = 0; i < s.layers.size(); ++i) {
    LayerSpec& L = s.layers[i];
    const std::string l = "model.layers." + std::to_string(i) + ".";
    auto split = [&](WeightRef* w, const std::string& fused, Shape shape, int64_t begin, int64_t end) {
      w->source = l + fused;
      w->source_shape = shape;
      w->dims = fused == "self_attn.qkv_proj.weight"
                    ? "[(num_attention_heads + 2 × num_key_value_heads) × head_dim, hidden_size]"
                    : "[2 × intermediate_size, hidden_size]";
      w->row_begin = begin;
      w->row_end = end;
    };
    split(&L.q, "self_attn.qkv_proj.weight", qkv_shape, 0, q_rows);
    split(&L.k, "self_attn.qkv_proj.weight", qkv_shape, q_rows, q_rows + kv_rows);
    split(&L.v, "self_attn.qkv_proj.weight", qkv_shape, q_rows + kv_rows, q_rows + 2 * kv_rows);
    split(&L.gate, "mlp.gate_up_proj.weight", gate_up_shape, 0, s.intermediate);
    split(&L.up, "mlp.gate_up_proj.weight", gate_up_shape, s.intermediate, 2 * s.intermediate);
  }
  std::vector<LayerKind> kinds(s.layers.size(), cfg.get("sliding_window") ? LayerKind::kSliding : LayerKind::kGlobal);
  HFS_TRY(set_sliding_layers(cfg, kinds, &s));
  return s;
}

const bool kRegistered = register_arch("phi3", &build_phi3);

}  // namespace
}  // namespace hfs
