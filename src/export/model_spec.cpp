// Spec parsing: the architecture registry and the config blocks every src/export/models/<arch>.cpp builds
// its ModelSpec from (dimensions checked against the checkpoint, RoPE frequencies, layer kinds, standard
// tensor naming). Nothing here reads weight data or knows the program's graph.
#include "export/model_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "hfstatic/ext/metadata_keys.h"

namespace hfs {

std::string_view layer_kind_name(LayerKind k) { return k == LayerKind::kSliding ? keys::kLayerSliding : keys::kLayerGlobal; }

Shape WeightRef::shape() const {
  Shape s = source_shape;
  if (row_end > 0 && s.rank() > 0) s[0] = row_end - row_begin;
  if (!stack.empty()) {
    std::vector<int64_t> dims{static_cast<int64_t>(stack.size())};
    for (int64_t d : s.dims()) dims.push_back(d);
    return Shape(std::span<const int64_t>(dims));
  }
  return s;
}

// --- registry ----------------------------------------------------------------------------------------

namespace {
// A function-local static: architectures register from other files' static initializers, which run in
// no fixed order relative to a namespace-scope map's construction.
std::map<std::string, ArchBuilder, std::less<>>& archs() {
  static std::map<std::string, ArchBuilder, std::less<>> m;
  return m;
}
}  // namespace

bool register_arch(std::string model_type, ArchBuilder builder) {
  archs()[std::move(model_type)] = builder;
  return true;
}

ArchBuilder find_arch(std::string_view model_type) {
  auto it = archs().find(model_type);
  return it == archs().end() ? nullptr : it->second;
}

std::vector<std::string> supported_archs() {
  std::vector<std::string> out;
  for (const auto& [k, _] : archs()) out.push_back(k);
  return out;
}

// --- config blocks -----------------------------------------------------------------------------------

namespace {

// What the checkpoint's tensors allow a config to claim. Config values are checked against these before
// anything sized by them exists (the layer list, RoPE tables, shapes whose products could overflow), so
// an absurd value is an error naming its key instead of a huge allocation.
struct CheckpointBounds {
  int64_t max_dim = 0;      // the largest dimension of any tensor
  int64_t n_layers = 0;     // 1 + the highest N in a tensor name containing "layers.N."
};

CheckpointBounds checkpoint_bounds(const Checkpoint& ck) {
  CheckpointBounds b;
  constexpr std::string_view kLayers = "layers.";
  for (const std::string& name : ck.tensor_names()) {
    if (const SafetensorInfo* t = ck.find(name))
      for (int64_t d : t->shape.dims()) b.max_dim = std::max(b.max_dim, d);
    for (size_t pos = name.find(kLayers); pos != std::string::npos; pos = name.find(kLayers, pos + 1)) {
      size_t i = pos + kLayers.size();
      int64_t n = 0;
      size_t digits = 0;
      for (; i < name.size() && digits < 10 && name[i] >= '0' && name[i] <= '9'; ++i, ++digits) n = n * 10 + (name[i] - '0');
      if (digits > 0 && i < name.size() && name[i] == '.') b.n_layers = std::max(b.n_layers, n + 1);
    }
  }
  return b;
}

}  // namespace

Status read_common_dims(const HfConfig& cfg, const Checkpoint& ck, ModelSpec* spec) {
  const CheckpointBounds b = checkpoint_bounds(ck);
  const std::string dim_why = b.max_dim > 0 ? "no tensor in the checkpoint has a larger dimension" : "the checkpoint has no tensors";
  const int64_t max_dim = std::max<int64_t>(b.max_dim, 1);
  auto dim = [&](std::string_view key, int64_t hi, int64_t* out) -> Status {
    HFS_ASSIGN_OR_RETURN(int64_t v,
                         cfg.int_in(key, 1, std::min(hi, max_dim), hi < max_dim ? "the runtime's limit" : dim_why));
    *out = v;
    return Ok{};
  };
  HFS_TRY(dim("hidden_size", INT64_MAX, &spec->hidden));
  HFS_TRY(dim("num_attention_heads", INT64_MAX, &spec->n_heads));
  HFS_TRY(dim("intermediate_size", INT64_MAX, &spec->intermediate));
  HFS_TRY(dim("vocab_size", keys::kMaxVocabSize, &spec->vocab));
  HFS_ASSIGN_OR_RETURN(int64_t maxpos, cfg.int_in("max_position_embeddings", 1, INT64_MAX));
  spec->max_positions = maxpos;
  // Layers: at most what the tensor names number (each layer has its own weights), so a huge count fails here
  // rather than allocating per-layer descriptions.
  const int64_t layers_hi = std::min<int64_t>(b.n_layers, keys::kMaxLayers);
  HFS_ASSIGN_OR_RETURN(int64_t n_layers,
                       cfg.int_in("num_hidden_layers", 1, std::max<int64_t>(layers_hi, 1),
                                  b.n_layers == 0 ? "the checkpoint has no 'layers.N.' tensors"
                                  : b.n_layers > keys::kMaxLayers
                                      ? "the runtime's limit"
                                      : "the checkpoint's tensors cover layers 0.." + std::to_string(b.n_layers - 1)));
  HFS_ASSIGN_OR_RETURN(
      int64_t kv, cfg.int_in_or("num_key_value_heads", spec->n_heads, 1, std::min(spec->n_heads, keys::kMaxKvHeads),
                                "at most num_attention_heads and the runtime's limit"));
  if (spec->n_heads % kv != 0)
    return cfg.bad_value("num_key_value_heads", "must divide num_attention_heads " + std::to_string(spec->n_heads) +
                                                    ", got " + std::to_string(kv));
  spec->n_kv_heads = kv;
  if (!cfg.get("head_dim") && spec->hidden % spec->n_heads != 0)
    return cfg.bad_value("hidden_size", std::to_string(spec->hidden) + " is not divisible by num_attention_heads " +
                                            std::to_string(spec->n_heads) + " and no head_dim is given");
  // The projections have num_attention_heads × head_dim rows: bounded by the tensors, so no product overflows.
  const int64_t hd_hi = std::min(keys::kMaxHeadDim, max_dim / spec->n_heads);
  HFS_ASSIGN_OR_RETURN(
      int64_t hd,
      cfg.int_in_or("head_dim", spec->hidden / spec->n_heads, 2, std::max<int64_t>(hd_hi, 2),
                    hd_hi < keys::kMaxHeadDim ? "num_attention_heads × head_dim must not exceed the largest tensor "
                                                "dimension in the checkpoint, " +
                                                    std::to_string(b.max_dim)
                                              : "the runtime's limit"));
  if (hd % 2 != 0) return cfg.bad_value("head_dim", "must be even (RoPE rotates pairs), got " + std::to_string(hd));
  if (hd > hd_hi)  // hd_hi < 2: even head_dim 2 is too large for these tensors
    return cfg.bad_value("head_dim", "num_attention_heads " + std::to_string(spec->n_heads) + " × head_dim " +
                                         std::to_string(hd) + " exceeds every tensor dimension in the checkpoint");
  spec->head_dim = hd;
  HFS_ASSIGN_OR_RETURN(double eps, cfg.positive_or("rms_norm_eps", 1e-6));
  spec->rms_eps = eps;
  spec->attn_scale = 1.0 / std::sqrt(static_cast<double>(spec->head_dim));
  spec->layers.assign(static_cast<size_t>(n_layers), LayerSpec{});
  return Ok{};
}

std::vector<float> rope_default_inv_freq(double base, int64_t dim) {
  // Mirrors HF: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all in float32.
  std::vector<float> out;
  const float b = static_cast<float>(base);
  for (int64_t i = 0; i < dim; i += 2) {
    const float e = static_cast<float>(i) / static_cast<float>(dim);
    out.push_back(1.0f / std::pow(b, e));
  }
  return out;
}

Status apply_rope_scaling(const HfConfig& cfg, const Value* rs, bool allow_llama3, std::vector<float>* inv_freq) {
  if (!rs || rs->is_null()) return Ok{};
  if (!rs->is_object()) return cfg.unsupported("rope_scaling", "expected null or an object, got " + rs->to_json());
  const Value* type = rs->get("rope_type");
  if (!type || type->is_null()) type = rs->get("type");
  if (!type || !type->is_string())
    return cfg.unsupported("rope_scaling", "no rope_type/type string in " + rs->to_json());
  const std::string& t = type->as_string();
  // Every parameter of the supported types is a ratio or a length: finite and > 0.
  auto num = [&](std::string_view key) -> Result<double> {
    const Value* v = rs->get(key);
    if (!v || !v->is_number() || !(v->as_float() > 0) || !std::isfinite(v->as_float()))
      return cfg.bad_value("rope_scaling", "rope_type '" + t + "' needs a finite number > 0 '" + std::string(key) +
                                               "', got " + (v ? v->to_json() : std::string("nothing")));
    return v->as_float();
  };
  if (t == "default") return Ok{};
  if (t == "linear") {
    HFS_ASSIGN_OR_RETURN(double factor, num("factor"));
    for (float& f : *inv_freq) f = f / static_cast<float>(factor);
    return Ok{};
  }
  if (t == "llama3" && allow_llama3) {
    HFS_ASSIGN_OR_RETURN(double factor, num("factor"));
    HFS_ASSIGN_OR_RETURN(double lo, num("low_freq_factor"));
    HFS_ASSIGN_OR_RETURN(double hi, num("high_freq_factor"));
    HFS_ASSIGN_OR_RETURN(double old, num("original_max_position_embeddings"));
    if (hi == lo) return cfg.bad_value("rope_scaling", "high_freq_factor equals low_freq_factor");
    // HF _compute_llama3_parameters, element-wise in float32.
    const float f = static_cast<float>(factor), lf = static_cast<float>(lo), hf = static_cast<float>(hi),
                oc = static_cast<float>(old);
    const float low_wavelen = oc / lf, high_wavelen = oc / hf;
    for (float& x : *inv_freq) {
      const float wavelen = static_cast<float>(2 * M_PI) / x;
      float y = wavelen > low_wavelen ? x / f : x;
      const float smooth = (oc / wavelen - lf) / (hf - lf);
      const float smoothed = (1 - smooth) * y / f + smooth * y;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      x = medium ? smoothed : y;
    }
    return Ok{};
  }
  return cfg.unsupported("rope_scaling", "rope type '" + t + "' is not supported for " + cfg.model_type +
                                             (allow_llama3 ? " (supported: default, linear, llama3)" : " (supported: default, linear)"));
}

Result<std::optional<std::vector<LayerKind>>> layer_kinds_from_config(const HfConfig& cfg, int64_t n_layers) {
  const Value* lt = cfg.get("layer_types");
  if (!lt) return std::optional<std::vector<LayerKind>>{};
  if (!lt->is_array() || static_cast<int64_t>(lt->size()) != n_layers)
    return cfg.bad_value("layer_types", "expected a list of " + std::to_string(n_layers) + " strings, got " + lt->to_json());
  std::vector<LayerKind> kinds;
  for (const Value& v : lt->as_array()) {
    if (v.is_string() && v.as_string() == "full_attention") {
      kinds.push_back(LayerKind::kGlobal);
    } else if (v.is_string() && v.as_string() == "sliding_attention") {
      kinds.push_back(LayerKind::kSliding);
    } else {
      return cfg.unsupported("layer_types", "entry " + v.to_json() + " (supported: full_attention, sliding_attention)");
    }
  }
  return std::optional<std::vector<LayerKind>>(std::move(kinds));
}

WeightRef weight_ref(const std::string& prefix, const std::string& name, Shape shape, WeightRef::Role role,
                     std::string dims) {
  WeightRef w;
  w.dims = std::move(dims);
  w.name = name;
  w.source = prefix + name;
  w.source_shape = shape;
  w.role = role;
  return w;
}

LayerSpec standard_layer(const ModelSpec& s, const std::string& prefix, int64_t i, const LayerNaming& n) {
  using R = WeightRef::Role;
  const std::string l = "layers." + std::to_string(i) + ".";
  const int64_t q_out = s.n_heads * s.head_dim, kv_out = s.n_kv_heads * s.head_dim;
  LayerSpec L;
  // Dimension names for shape messages.
  const std::string H = "hidden_size", Q = "num_attention_heads × head_dim", KV = "num_key_value_heads × head_dim",
                    I = "intermediate_size", D = "head_dim";
  auto mat = [&](const std::string& name, Shape shape, const std::string& d0, const std::string& d1) {
    return weight_ref(prefix, l + name, shape, R::kMatrix, "[" + d0 + ", " + d1 + "]");
  };
  auto norm = [&](const std::string& name, int64_t d, const std::string& dn) {
    return weight_ref(prefix, l + name, {d}, R::kNorm, "[" + dn + "]");
  };
  auto bias = [&](const std::string& name, int64_t d, const std::string& dn) {
    return weight_ref(prefix, l + name, {d}, R::kBias, "[" + dn + "]");
  };
  L.attn_norm = norm("input_layernorm.weight", s.hidden, H);
  L.q = mat("self_attn.q_proj.weight", {q_out, s.hidden}, Q, H);
  L.k = mat("self_attn.k_proj.weight", {kv_out, s.hidden}, KV, H);
  L.v = mat("self_attn.v_proj.weight", {kv_out, s.hidden}, KV, H);
  L.o = mat("self_attn.o_proj.weight", {s.hidden, q_out}, H, Q);
  if (n.qkv_bias) {
    L.q_bias = bias("self_attn.q_proj.bias", q_out, Q);
    L.k_bias = bias("self_attn.k_proj.bias", kv_out, KV);
    L.v_bias = bias("self_attn.v_proj.bias", kv_out, KV);
  }
  if (n.o_bias) L.o_bias = bias("self_attn.o_proj.bias", s.hidden, H);
  if (n.qk_norm) {
    L.q_norm = norm("self_attn.q_norm.weight", s.head_dim, D);
    L.k_norm = norm("self_attn.k_norm.weight", s.head_dim, D);
  }
  if (n.gemma_norms) {
    L.post_attn_norm = norm("post_attention_layernorm.weight", s.hidden, H);
    L.ff_norm = norm("pre_feedforward_layernorm.weight", s.hidden, H);
    L.post_ff_norm = norm("post_feedforward_layernorm.weight", s.hidden, H);
  } else {
    L.ff_norm = norm("post_attention_layernorm.weight", s.hidden, H);
  }
  L.gate = mat("mlp.gate_proj.weight", {s.intermediate, s.hidden}, I, H);
  L.up = mat("mlp.up_proj.weight", {s.intermediate, s.hidden}, I, H);
  L.down = mat("mlp.down_proj.weight", {s.hidden, s.intermediate}, H, I);
  if (n.mlp_bias) {
    L.gate_bias = bias("mlp.gate_proj.bias", s.intermediate, I);
    L.up_bias = bias("mlp.up_proj.bias", s.intermediate, I);
    L.down_bias = bias("mlp.down_proj.bias", s.hidden, H);
  }
  return L;
}

void standard_head(ModelSpec* spec, const std::string& prefix, bool tied, const std::string& lm_head_source) {
  using R = WeightRef::Role;
  spec->embed = weight_ref(prefix, "embed_tokens.weight", {spec->vocab, spec->hidden}, R::kMatrix, "[vocab_size, hidden_size]");
  spec->final_norm = weight_ref(prefix, "norm.weight", {spec->hidden}, R::kNorm, "[hidden_size]");
  if (tied) {
    spec->lm_head = spec->embed;
  } else {
    spec->lm_head = weight_ref("", lm_head_source, {spec->vocab, spec->hidden}, R::kMatrix, "[vocab_size, hidden_size]");
    spec->lm_head.name = "lm_head.weight";
  }
}

Result<double> rope_base(const HfConfig& cfg, std::string_view key, double def) {
  return cfg.positive_or(key, def, std::numeric_limits<float>::max());  // the tables are computed in float32
}

Status decoder_skeleton(const HfConfig& cfg, const Checkpoint& ck, const LayerNaming& naming, bool allow_llama3,
                        bool tie_default, ModelSpec* spec) {
  spec->arch = cfg.model_type;
  HFS_TRY(read_common_dims(cfg, ck, spec));
  HFS_ASSIGN_OR_RETURN(double theta, rope_base(cfg, "rope_theta", 10000.0));
  spec->inv_freq_global = rope_default_inv_freq(theta, spec->head_dim);
  HFS_TRY(apply_rope_scaling(cfg, cfg.get("rope_scaling"), allow_llama3, &spec->inv_freq_global));
  HFS_ASSIGN_OR_RETURN(std::string act, cfg.string_or("hidden_act", "silu"));
  HFS_ASSIGN_OR_RETURN(std::string a, activation_from_config(cfg, "hidden_act", act));
  spec->act = std::move(a);
  HFS_ASSIGN_OR_RETURN(bool tied, cfg.bool_or("tie_word_embeddings", tie_default));
  for (size_t i = 0; i < spec->layers.size(); ++i)
    spec->layers[i] = standard_layer(*spec, "model.", static_cast<int64_t>(i), naming);
  standard_head(spec, "model.", tied);
  return Ok{};
}

Status set_sliding_layers(const HfConfig& cfg, const std::vector<LayerKind>& kinds, ModelSpec* spec) {
  bool any = false;
  for (size_t i = 0; i < spec->layers.size() && i < kinds.size(); ++i) {
    spec->layers[i].kind = kinds[i];
    any = any || kinds[i] == LayerKind::kSliding;
  }
  if (!any) return Ok{};
  if (!cfg.get("sliding_window")) return cfg.bad_value("sliding_window", "required but missing (some layers are sliding)");
  HFS_ASSIGN_OR_RETURN(int64_t w, cfg.int_in("sliding_window", 1, INT64_MAX));
  spec->sliding_window = w;
  return Ok{};
}

Status gemma_skeleton(const HfConfig& cfg, const Checkpoint& ck, const std::string& prefix, bool qk_norm, ModelSpec* spec) {
  spec->arch = cfg.model_type;
  HFS_TRY(read_common_dims(cfg, ck, spec));
  spec->norm_unit_offset = spec->qk_norm_unit_offset = true;
  spec->embed_scale = std::sqrt(static_cast<double>(spec->hidden));
  HFS_ASSIGN_OR_RETURN(double qpas, cfg.positive_or("query_pre_attn_scalar", static_cast<double>(spec->head_dim)));
  spec->attn_scale = 1.0 / std::sqrt(qpas);
  // A soft-cap of 0 (or null) means none.
  HFS_ASSIGN_OR_RETURN(double attn_cap, cfg.non_negative_or("attn_logit_softcapping", 0.0));
  HFS_ASSIGN_OR_RETURN(double final_cap, cfg.non_negative_or("final_logit_softcapping", 0.0));
  spec->attn_softcap = attn_cap;
  spec->final_softcap = final_cap;
  // Gemma configs name the MLP activation hidden_activation (hidden_act is a legacy alias).
  const char* act_key = cfg.get("hidden_activation") ? "hidden_activation" : "hidden_act";
  HFS_ASSIGN_OR_RETURN(std::string act, cfg.string_or(act_key, "gelu_pytorch_tanh"));
  HFS_ASSIGN_OR_RETURN(std::string a, activation_from_config(cfg, act_key, act));
  spec->act = std::move(a);
  HFS_ASSIGN_OR_RETURN(bool tied, cfg.bool_or("tie_word_embeddings", true));
  LayerNaming n;
  n.gemma_norms = true;
  n.qk_norm = qk_norm;
  for (size_t i = 0; i < spec->layers.size(); ++i)
    spec->layers[i] = standard_layer(*spec, prefix, static_cast<int64_t>(i), n);
  standard_head(spec, prefix, tied);
  return Ok{};
}

Result<std::string> activation_from_config(const HfConfig& cfg, std::string_view key, const std::string& v) {
  if (v == "silu" || v == "swish") return std::string("silu");
  if (v == "gelu_pytorch_tanh" || v == "gelu_tanh" || v == "gelu_new") return std::string("gelu_tanh");
  return cfg.unsupported(key, "activation '" + v + "' (supported: silu, gelu_pytorch_tanh)");
}

// --- mixtures of experts ------------------------------------------------------------------------------

void set_moe_layer(ModelSpec* spec, const std::string& prefix, int64_t i, int64_t experts, int64_t top_k, int64_t inter,
                   bool norm_topk_prob, const MoeNaming& n) {
  using R = WeightRef::Role;
  LayerSpec& L = spec->layers[static_cast<size_t>(i)];
  L.gate = L.up = L.down = L.gate_bias = L.up_bias = L.down_bias = WeightRef{};
  const std::string m = "layers." + std::to_string(i) + "." + n.module;
  const int64_t H = spec->hidden;
  MoeSpec& moe = L.moe;
  moe.experts = experts;
  moe.top_k = top_k;
  moe.norm_topk_prob = norm_topk_prob;
  moe.router = weight_ref(prefix, m + "gate.weight", {experts, H}, R::kMatrix, "[num_experts, hidden_size]");
  auto stacked = [&](const std::string& proj, Shape shape, std::string dims) {
    // The program's constant is named after the module ("...experts.gate_proj.weight" for every layout).
    WeightRef w = weight_ref(prefix, m + "experts.0." + proj + ".weight", shape, R::kMatrix, std::move(dims));
    for (int64_t e = 0; e < experts; ++e) w.stack.push_back(prefix + m + "experts." + std::to_string(e) + "." + proj + ".weight");
    return w;
  };
  moe.gate = stacked(n.gate, {inter, H}, "[expert intermediate size, hidden_size]");
  moe.up = stacked(n.up, {inter, H}, "[expert intermediate size, hidden_size]");
  moe.down = stacked(n.down, {H, inter}, "[hidden_size, expert intermediate size]");
  moe.gate.name = m + "experts.gate_proj.weight";
  moe.up.name = m + "experts.up_proj.weight";
  moe.down.name = m + "experts.down_proj.weight";
  if (n.shared_inter > 0) {
    const int64_t S = n.shared_inter;
    const std::string d = "shared_expert_intermediate_size";
    moe.shared_gate = weight_ref(prefix, m + "shared_expert.gate_proj.weight", {S, H}, R::kMatrix, "[" + d + ", hidden_size]");
    moe.shared_up = weight_ref(prefix, m + "shared_expert.up_proj.weight", {S, H}, R::kMatrix, "[" + d + ", hidden_size]");
    moe.shared_down = weight_ref(prefix, m + "shared_expert.down_proj.weight", {H, S}, R::kMatrix, "[hidden_size, " + d + "]");
    moe.shared_expert_gate = weight_ref(prefix, m + "shared_expert_gate.weight", {1, H}, R::kMatrix, "[1, hidden_size]");
  }
}

Result<int64_t> expert_count(const HfConfig& cfg, const Checkpoint& ck, std::string_view key, int64_t def) {
  // Each expert has its own tensors: a count beyond the checkpoint's tensor count cannot be right, and bounding
  // it keeps the per-expert lists small for an absurd value.
  const auto hi = static_cast<int64_t>(ck.tensor_names().size());
  return cfg.int_in_or(key, def, 1, std::max<int64_t>(hi, 1), "the checkpoint's tensor count");
}

Status qwen_moe_layers(const HfConfig& cfg, const Checkpoint& ck, int64_t shared_inter, ModelSpec* s) {
  if (!cfg.get("num_experts")) return cfg.bad_value("num_experts", "required for " + cfg.model_type);
  HFS_ASSIGN_OR_RETURN(int64_t experts_or_zero, cfg.int_in("num_experts", 0, INT64_MAX));
  if (experts_or_zero == 0) return Ok{};  // HF: no experts, every layer dense
  HFS_ASSIGN_OR_RETURN(int64_t experts, expert_count(cfg, ck, "num_experts", 0));
  HFS_ASSIGN_OR_RETURN(int64_t top_k, cfg.int_in("num_experts_per_tok", 1, experts, "at most num_experts"));
  HFS_ASSIGN_OR_RETURN(int64_t inter, cfg.int_in("moe_intermediate_size", 1, INT64_MAX));
  HFS_ASSIGN_OR_RETURN(bool norm, cfg.bool_or("norm_topk_prob", false));
  HFS_ASSIGN_OR_RETURN(int64_t step, cfg.int_in_or("decoder_sparse_step", 1, 1, INT64_MAX));
  std::vector<bool> dense(s->layers.size(), false);
  if (const Value* only = cfg.get("mlp_only_layers")) {
    if (!only->is_array()) return cfg.bad_value("mlp_only_layers", "expected a list of layer indices, got " + only->to_json());
    for (const Value& v : only->as_array()) {
      if (!v.is_int() || v.as_int() < 0 || v.as_int() >= static_cast<int64_t>(s->layers.size()))
        return cfg.bad_value("mlp_only_layers", "entry " + v.to_json() + " is not a layer index in [0, " +
                                                    std::to_string(s->layers.size()) + ")");
      dense[static_cast<size_t>(v.as_int())] = true;
    }
  }
  MoeNaming naming;
  naming.shared_inter = shared_inter;
  for (size_t i = 0; i < s->layers.size(); ++i)
    if (!dense[i] && (static_cast<int64_t>(i) + 1) % step == 0)
      set_moe_layer(s, "model.", static_cast<int64_t>(i), experts, top_k, inter, norm, naming);
  return Ok{};
}

}  // namespace hfs
