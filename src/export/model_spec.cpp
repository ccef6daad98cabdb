// Shared exporter blocks: config helpers, RoPE frequencies, standard layer naming, and the hf_static v1
// graph/constant/metadata assembly used by every architecture.
#include "export/model_spec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "export/convert.h"
#include "export/weight_values.h"
#include "hfstatic/tokenizer.h"
#include "core/quant.h"
#include "hfstatic/metadata_keys.h"

namespace hfs {

std::string_view layer_kind_name(LayerKind k) { return k == LayerKind::kSliding ? keys::kLayerSliding : keys::kLayerGlobal; }

Shape WeightRef::shape() const {
  Shape s = source_shape;
  if (row_end > 0 && s.rank() > 0) s[0] = row_end - row_begin;
  return s;
}

// --- registry ----------------------------------------------------------------------------------------

namespace {
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
    auto v = cfg.int_in(key, 1, std::min(hi, max_dim), hi < max_dim ? "the runtime's limit" : dim_why);
    if (!v) return v.error();
    *out = *v;
    return Ok{};
  };
  HFS_TRY(dim("hidden_size", INT64_MAX, &spec->hidden));
  HFS_TRY(dim("num_attention_heads", INT64_MAX, &spec->n_heads));
  HFS_TRY(dim("intermediate_size", INT64_MAX, &spec->intermediate));
  HFS_TRY(dim("vocab_size", keys::kMaxVocabSize, &spec->vocab));
  auto maxpos = cfg.int_in("max_position_embeddings", 1, INT64_MAX);
  if (!maxpos) return maxpos.error();
  spec->max_positions = *maxpos;
  // Layers: at most what the tensor names number (each layer has its own weights), so a huge count fails here
  // rather than allocating per-layer descriptions.
  const int64_t layers_hi = std::min<int64_t>(b.n_layers, keys::kMaxLayers);
  auto n_layers = cfg.int_in("num_hidden_layers", 1, std::max<int64_t>(layers_hi, 1),
                             b.n_layers == 0 ? "the checkpoint has no 'layers.N.' tensors"
                             : b.n_layers > keys::kMaxLayers
                                 ? "the runtime's limit"
                                 : "the checkpoint's tensors cover layers 0.." + std::to_string(b.n_layers - 1));
  if (!n_layers) return n_layers.error();
  auto kv = cfg.int_in_or("num_key_value_heads", spec->n_heads, 1, std::min(spec->n_heads, keys::kMaxKvHeads),
                          "at most num_attention_heads and the runtime's limit");
  if (!kv) return kv.error();
  if (spec->n_heads % *kv != 0)
    return cfg.bad_value("num_key_value_heads", "must divide num_attention_heads " + std::to_string(spec->n_heads) +
                                                    ", got " + std::to_string(*kv));
  spec->n_kv_heads = *kv;
  if (!cfg.get("head_dim") && spec->hidden % spec->n_heads != 0)
    return cfg.bad_value("hidden_size", std::to_string(spec->hidden) + " is not divisible by num_attention_heads " +
                                            std::to_string(spec->n_heads) + " and no head_dim is given");
  // The projections have num_attention_heads × head_dim rows: bounded by the tensors, so no product overflows.
  const int64_t hd_hi = std::min(keys::kMaxHeadDim, max_dim / spec->n_heads);
  auto hd = cfg.int_in_or("head_dim", spec->hidden / spec->n_heads, 2, std::max<int64_t>(hd_hi, 2),
                          hd_hi < keys::kMaxHeadDim ? "num_attention_heads × head_dim must not exceed the largest tensor "
                                                      "dimension in the checkpoint, " + std::to_string(b.max_dim)
                                                    : "the runtime's limit");
  if (!hd) return hd.error();
  if (*hd % 2 != 0) return cfg.bad_value("head_dim", "must be even (RoPE rotates pairs), got " + std::to_string(*hd));
  if (*hd > hd_hi)  // hd_hi < 2: even head_dim 2 is too large for these tensors
    return cfg.bad_value("head_dim", "num_attention_heads " + std::to_string(spec->n_heads) + " × head_dim " +
                                         std::to_string(*hd) + " exceeds every tensor dimension in the checkpoint");
  spec->head_dim = *hd;
  auto eps = cfg.positive_or("rms_norm_eps", 1e-6);
  if (!eps) return eps.error();
  spec->rms_eps = *eps;
  spec->attn_scale = 1.0 / std::sqrt(static_cast<double>(spec->head_dim));
  spec->layers.assign(static_cast<size_t>(*n_layers), LayerSpec{});
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
    auto factor = num("factor");
    if (!factor) return factor.error();
    for (float& f : *inv_freq) f = f / static_cast<float>(*factor);
    return Ok{};
  }
  if (t == "llama3" && allow_llama3) {
    auto factor = num("factor"), lo = num("low_freq_factor"), hi = num("high_freq_factor"),
         old = num("original_max_position_embeddings");
    for (auto* r : {&factor, &lo, &hi, &old})
      if (!*r) return r->error();
    if (*hi == *lo) return cfg.bad_value("rope_scaling", "high_freq_factor equals low_freq_factor");
    // HF _compute_llama3_parameters, element-wise in float32.
    const float f = static_cast<float>(*factor), lf = static_cast<float>(*lo), hf = static_cast<float>(*hi),
                oc = static_cast<float>(*old);
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
  auto theta = rope_base(cfg, "rope_theta", 10000.0);
  if (!theta) return theta.error();
  spec->inv_freq_global = rope_default_inv_freq(*theta, spec->head_dim);
  HFS_TRY(apply_rope_scaling(cfg, cfg.get("rope_scaling"), allow_llama3, &spec->inv_freq_global));
  auto act = cfg.string_or("hidden_act", "silu");
  if (!act) return act.error();
  auto a = activation_from_config(cfg, "hidden_act", *act);
  if (!a) return a.error();
  spec->act = *a;
  auto tied = cfg.bool_or("tie_word_embeddings", tie_default);
  if (!tied) return tied.error();
  for (size_t i = 0; i < spec->layers.size(); ++i)
    spec->layers[i] = standard_layer(*spec, "model.", static_cast<int64_t>(i), naming);
  standard_head(spec, "model.", *tied);
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
  auto w = cfg.int_in("sliding_window", 1, INT64_MAX);
  if (!w) return w.error();
  spec->sliding_window = *w;
  return Ok{};
}

Status gemma_skeleton(const HfConfig& cfg, const Checkpoint& ck, const std::string& prefix, bool qk_norm, ModelSpec* spec) {
  spec->arch = cfg.model_type;
  HFS_TRY(read_common_dims(cfg, ck, spec));
  spec->norm_unit_offset = spec->qk_norm_unit_offset = true;
  spec->embed_scale = std::sqrt(static_cast<double>(spec->hidden));
  auto qpas = cfg.positive_or("query_pre_attn_scalar", static_cast<double>(spec->head_dim));
  if (!qpas) return qpas.error();
  spec->attn_scale = 1.0 / std::sqrt(*qpas);
  auto attn_cap = cfg.non_negative_or("attn_logit_softcapping", 0.0);  // 0 (or null) = no soft-cap
  if (!attn_cap) return attn_cap.error();
  auto final_cap = cfg.non_negative_or("final_logit_softcapping", 0.0);
  if (!final_cap) return final_cap.error();
  spec->attn_softcap = *attn_cap;
  spec->final_softcap = *final_cap;
  // Gemma configs name the MLP activation hidden_activation (hidden_act is a legacy alias).
  const char* act_key = cfg.get("hidden_activation") ? "hidden_activation" : "hidden_act";
  auto act = cfg.string_or(act_key, "gelu_pytorch_tanh");
  if (!act) return act.error();
  auto a = activation_from_config(cfg, act_key, *act);
  if (!a) return a.error();
  spec->act = *a;
  auto tied = cfg.bool_or("tie_word_embeddings", true);
  if (!tied) return tied.error();
  LayerNaming n;
  n.gemma_norms = true;
  n.qk_norm = qk_norm;
  for (size_t i = 0; i < spec->layers.size(); ++i)
    spec->layers[i] = standard_layer(*spec, prefix, static_cast<int64_t>(i), n);
  standard_head(spec, prefix, *tied);
  return Ok{};
}

Result<std::string> activation_from_config(const HfConfig& cfg, std::string_view key, const std::string& v) {
  if (v == "silu" || v == "swish") return std::string("silu");
  if (v == "gelu_pytorch_tanh" || v == "gelu_tanh" || v == "gelu_new") return std::string("gelu_tanh");
  return cfg.unsupported(key, "activation '" + v + "' (supported: silu, gelu_pytorch_tanh)");
}

// --- plan assembly -----------------------------------------------------------------------------------

namespace {

struct Geometry {
  int64_t chunk = 0;    // C
  int64_t context = 0;  // S_global
  int64_t ring = 0;     // R for sliding layers (0 when none)
  bool has_global = false, has_sliding = false;
  int64_t cache_len(LayerKind k) const { return k == LayerKind::kSliding ? ring : context; }
};

std::vector<const WeightRef*> all_weights(const ModelSpec& s) {
  std::vector<const WeightRef*> out{&s.embed};
  for (const LayerSpec& L : s.layers)
    for (const WeightRef* w : {&L.attn_norm, &L.q, &L.q_bias, &L.k, &L.k_bias, &L.v, &L.v_bias, &L.q_norm, &L.k_norm,
                               &L.o, &L.o_bias, &L.post_attn_norm, &L.ff_norm, &L.gate, &L.gate_bias, &L.up, &L.up_bias,
                               &L.down, &L.down_bias, &L.post_ff_norm})
      if (w->present()) out.push_back(w);
  out.push_back(&s.final_norm);
  if (s.lm_head.name != s.embed.name) out.push_back(&s.lm_head);
  return out;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Checks one weight against the checkpoint and returns the dtype to store it in.
Result<DType> check_weight(const WeightRef& w, const Checkpoint& ck, const HfConfig& cfg, WeightsMode mode,
                           bool embedding_or_head) {
  const SafetensorInfo* t = ck.find(w.source);
  if (!t)
    return make_error(ErrorCode::kMissingTensor, ck.dir() + ": tensor '" + w.source + "' not found in the checkpoint");
  const std::string where = ck.dir() + "/" + ck.file_of(w.source) + ": tensor '" + w.source + "'";
  if (t->shape != w.source_shape)
    return make_error(ErrorCode::kBadCheckpoint,
                      where + ": expected shape " + w.source_shape.to_string() + ", got " + t->shape.to_string() +
                          (w.dims.empty() ? "" : " (the expected shape is " + w.dims + " from " + cfg.where + ")"));
  if (w.row_end > 0 && (w.row_begin < 0 || w.row_end > t->shape[0] || w.row_begin >= w.row_end))
    return make_error(ErrorCode::kInternal, where + ": row range out of bounds");
  if (!is_float(t->dtype))
    return make_error(ErrorCode::kUnsupportedModel,
                      where + ": dtype " + std::string(dtype_name(t->dtype)) + " (only f32/f16/bf16 weights are supported)");
  if (w.role != WeightRef::Role::kMatrix) return DType::kF32;
  switch (mode) {
    case WeightsMode::kKeep: return t->dtype;
    case WeightsMode::kF32: return DType::kF32;
    case WeightsMode::kF16: return DType::kF16;
    case WeightsMode::kBF16: return DType::kBF16;
    // The embedding table (also the LM head when tied) and an untied LM head stay int8 under int4, as
    // llama.cpp keeps its output tensor at Q6_K/Q8_0: 4-bit logits cost noticeably more accuracy than
    // 4-bit layers. q4_0 needs whole blocks of 32 along K.
    case WeightsMode::kInt8: return DType::kI8;
    case WeightsMode::kInt4:
      return embedding_or_head ? DType::kI8 : (w.shape()[w.shape().rank() - 1] % 32 == 0 ? DType::kQ4_0 : DType::kI8);
  }
  return DType::kF32;
}

// The f32 values of a weight's (row range of its) checkpoint tensor: the one tensor held in RAM while a
// quantized constant is produced.
Result<std::vector<float>> weight_as_f32(const Checkpoint& ck, const std::string& source, int64_t rb, int64_t re) {
  const SafetensorInfo* t = ck.find(source);
  auto bytes = ck.data(source);
  if (!t || !bytes) return make_error(ErrorCode::kMissingTensor, "tensor '" + source + "' vanished from the checkpoint");
  std::span<const std::byte> src = *bytes;
  if (re > 0) {
    const uint64_t row_bytes = t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
    src = src.subspan(static_cast<size_t>(rb) * row_bytes, static_cast<size_t>(re - rb) * row_bytes);
  }
  const size_t n = src.size() / dtype_info(t->dtype).block_bytes;
  std::vector<float> out(n);
  Status st = convert_floats(src, t->dtype, std::as_writable_bytes(std::span(out)), DType::kF32);
  if (!st) return st.error().with_context("tensor '" + source + "'");
  return out;
}

// Quantized weight (i8 or q4_0) and, for i8, its per-row scale constant "<name>.scale".
std::vector<PlannedConstant> quantized_constants(const WeightRef& w, DType to, std::shared_ptr<const Checkpoint> ck,
                                                 const ExportOptions& opt) {
  const Shape shape = w.shape();
  const int64_t rows = shape[0], k = shape[shape.rank() - 1];
  const std::string key = "ckpt:" + w.source + "|rows " + std::to_string(w.row_begin) + ":" + std::to_string(w.row_end);
  const std::string source = w.source, name = w.name;
  const int64_t rb = w.row_begin, re = w.row_end;
  auto report = opt.on_quantized;
  std::vector<PlannedConstant> out;
  PlannedConstant q;
  q.name = w.name;
  q.type = {to, shape};
  q.content_key = key + "|" + std::string(dtype_name(to));
  q.produce = [ck, source, name, rb, re, rows, k, to, report](std::span<std::byte> dst) -> Status {
    auto f = weight_as_f32(*ck, source, rb, re);
    if (!f) return f.error();
    std::vector<float> back(f->size());
    if (to == DType::kQ4_0) {
      HFS_TRY(quant::quantize_q4_0(f->data(), rows, k, reinterpret_cast<uint8_t*>(dst.data())));
      quant::dequantize_q4_0(reinterpret_cast<const uint8_t*>(dst.data()), rows, k, back.data());
    } else {
      std::vector<float> scale(static_cast<size_t>(rows));
      quant::quantize_i8_per_channel(f->data(), rows, k, reinterpret_cast<int8_t*>(dst.data()), scale.data());
      quant::dequantize_i8_per_channel(reinterpret_cast<const int8_t*>(dst.data()), scale.data(), rows, k, back.data());
    }
    if (report) report(name, to, quant::relative_rms_error(f->data(), back.data(), static_cast<int64_t>(f->size())));
    return Ok{};
  };
  out.push_back(std::move(q));
  if (to == DType::kI8) {
    PlannedConstant s;
    s.name = w.name + ".scale";
    s.type = {DType::kF32, {rows}};
    s.content_key = key + "|i8.scale";
    s.produce = [ck, source, rb, re, rows, k](std::span<std::byte> dst) -> Status {
      auto f = weight_as_f32(*ck, source, rb, re);
      if (!f) return f.error();
      std::vector<int8_t> q(f->size());
      quant::quantize_i8_per_channel(f->data(), rows, k, q.data(), reinterpret_cast<float*>(dst.data()));
      return Ok{};
    };
    out.push_back(std::move(s));
  }
  return out;
}

PlannedConstant weight_constant(const WeightRef& w, DType to, std::shared_ptr<const Checkpoint> ck) {
  PlannedConstant c;
  c.name = w.name;
  c.type = {to, w.shape()};
  c.content_key = "ckpt:" + w.source + "|rows " + std::to_string(w.row_begin) + ":" + std::to_string(w.row_end) + "|" +
                  std::string(dtype_name(to));
  const std::string source = w.source;
  const int64_t rb = w.row_begin, re = w.row_end;
  if (const SafetensorInfo* t = ck->find(source); t && t->dtype == to) {
    // Unchanged bytes (rows of a fused tensor are contiguous too): copied file to file by the writer.
    const uint64_t row_bytes = t->shape.rank() > 0 && t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
    c.source_file = ck->dir() + "/" + ck->file_of(source);
    c.source_offset = t->offset + (re > 0 ? static_cast<uint64_t>(rb) * row_bytes : 0);
  }
  c.produce = [ck = std::move(ck), source, rb, re, to](std::span<std::byte> dst) -> Status {
    const SafetensorInfo* t = ck->find(source);
    auto bytes = ck->data(source);
    if (!t || !bytes) return make_error(ErrorCode::kMissingTensor, "tensor '" + source + "' vanished from the checkpoint");
    std::span<const std::byte> src = *bytes;
    if (re > 0) {
      const uint64_t row_bytes = t->shape[0] > 0 ? t->nbytes / static_cast<uint64_t>(t->shape[0]) : 0;
      src = src.subspan(static_cast<size_t>(rb) * row_bytes, static_cast<size_t>(re - rb) * row_bytes);
    }
    Status st = convert_floats(src, t->dtype, dst, to);
    if (!st) return st.error().with_context("tensor '" + source + "'");
    return Ok{};
  };
  return c;
}

// The tokenizer a program embeds is loaded at run time by Tokenizer::from_program; loading it here with the
// same code turns a file the runtime cannot use into an export error, and the ids it can produce must have
// rows in the embedding. Without tokenizer.json the program still runs on token ids (run --tokens).
Status check_tokenizer(const std::vector<EmbeddedFile>& files, const HfConfig& cfg, int64_t vocab) {
  std::shared_ptr<const std::string> tj, tc;
  for (const EmbeddedFile& f : files) {
    if (f.file_name == "tokenizer.json") tj = f.bytes;
    if (f.file_name == "tokenizer_config.json") tc = f.bytes;
  }
  if (!tj) return Ok{};
  const std::string path = cfg.dir + "/tokenizer.json", config_path = cfg.dir + "/tokenizer_config.json";
  auto fail = [&](ErrorCode code, const std::string& file, const std::string& msg) {
    return make_error(code, msg.find(file) == std::string::npos ? file + ": " + msg : msg);
  };
  auto tok = Tokenizer::from_json(*tj, tc ? std::string_view(*tc) : std::string_view(), path);
  if (!tok) {
    const std::string& m = tok.error().message();
    // The loader names tokenizer_config.json in its own messages; everything else is about tokenizer.json.
    const std::string& file = m.find("tokenizer_config.json") != std::string::npos ? config_path : path;
    if (tok.error().code() == ErrorCode::kUnsupported)
      return fail(ErrorCode::kUnsupportedModel, file,
                  m + " (without tokenizer.json the export is a program that runs on token ids only)");
    return fail(ErrorCode::kBadCheckpoint, file, m);
  }
  const Tokenizer& t = **tok;
  if (t.vocab_size() == 0) return fail(ErrorCode::kBadCheckpoint, path, "the vocabulary is empty (model.vocab and added_tokens)");
  if (t.vocab_size() > vocab) {
    const int32_t id = t.vocab_size() - 1;
    return fail(ErrorCode::kBadCheckpoint, path,
                "token '" + t.id_to_token(id).value_or("?") + "' has id " + std::to_string(id) + ", but " + cfg.where +
                    " has vocab_size " + std::to_string(vocab) + ": ids from " + std::to_string(vocab) +
                    " on have no embedding row");
  }
  // Ordinary text must become tokens: a vocabulary that matches nothing (emptied model.vocab beside a few
  // added tokens) would make every prompt empty at run time.
  auto probe = t.encode("Hello world", /*add_special=*/false);
  if (!probe) return fail(ErrorCode::kBadCheckpoint, path, "cannot encode 'Hello world': " + probe.error().message());
  if (probe->empty()) return fail(ErrorCode::kBadCheckpoint, path, "encodes 'Hello world' to no tokens (an unusable vocabulary)");
  return Ok{};
}

PlannedConstant bytes_constant(std::string name, TensorType type, std::string key, std::shared_ptr<const std::string> bytes) {
  PlannedConstant c;
  c.name = std::move(name);
  c.type = type;
  c.content_key = std::move(key);
  c.produce = [bytes = std::move(bytes), name = c.name](std::span<std::byte> dst) -> Status {
    if (dst.size() != bytes->size())
      return make_error(ErrorCode::kInternal, "constant '" + name + "': " + std::to_string(bytes->size()) +
                                                  " bytes for a " + std::to_string(dst.size()) + "-byte slot");
    std::memcpy(dst.data(), bytes->data(), bytes->size());
    return Ok{};
  };
  return c;
}

std::shared_ptr<const std::string> float_bytes(const std::vector<float>& v) {
  return std::make_shared<const std::string>(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

Attrs attrs(std::initializer_list<std::pair<const std::string, Value>> kv) { return Attrs(kv); }

// Emits the nodes of one method (T tokens).
class MethodBuilder {
 public:
  MethodBuilder(const ModelSpec& s, const Geometry& g, const ExportOptions& o, std::string rope_global,
                std::string rope_sliding, const std::map<std::string, DType>& stored)
      : s_(s), g_(g), o_(o), rope_global_(std::move(rope_global)), rope_sliding_(std::move(rope_sliding)),
        stored_(stored) {}

  MethodDef build(const std::string& name, int64_t T) {
    m_ = MethodDef{name, {}, {}, {}};
    T_ = T;
    declare_inputs();
    std::vector<std::string> embed_in{s_.embed.name, std::string(keys::kInputIds)};
    if (auto it = stored_.find(s_.embed.name); it != stored_.end() && it->second == DType::kI8)
      embed_in.push_back(s_.embed.name + ".scale");  // per-row scale, shared with a tied LM head
    std::string h = node("embedding", std::move(embed_in), {}, "embed");  // [1, T, H]
    if (s_.embed_scale != 0) h = node("scale", {h}, attrs({{"value", Value(s_.embed_scale)}}), "embed.scaled");
    for (size_t i = 0; i < s_.layers.size(); ++i) h = layer(static_cast<int>(i), h);
    if (!o_.logits_all)  // [1, T, H] -> [1, 1, H]: only the last valid row reaches the head
      h = node("gather", {h, std::string(keys::kLogitsIndex)}, attrs({{"axis", Value(1)}}), "last_hidden");
    const bool softcap = s_.final_softcap > 0;
    h = norm(h, s_.final_norm, s_.norm_unit_offset, "final_norm");
    std::string logits = linear(h, s_.lm_head, WeightRef{}, softcap ? "logits.raw" : std::string(keys::kLogits));
    if (softcap) node("softcap", {logits}, attrs({{"cap", Value(s_.final_softcap)}}), std::string(keys::kLogits));
    declare_outputs();
    return std::move(m_);
  }

 private:
  std::string node(std::string op, std::vector<std::string> in, Attrs a, std::string out) {
    m_.nodes.push_back({std::move(op), std::move(in), {out}, std::move(a)});
    return out;
  }

  std::string norm(const std::string& x, const WeightRef& w, bool unit_offset, const std::string& out) {
    Attrs a = attrs({{"eps", Value(s_.rms_eps)}});
    if (unit_offset) a["unit_offset"] = Value(true);
    return node("rms_norm", {x, w.name}, std::move(a), out);
  }

  std::string linear(const std::string& x, const WeightRef& w, const WeightRef& b, const std::string& out) {
    std::vector<std::string> in{x, w.name};
    if (b.present()) in.push_back(b.name);
    auto it = stored_.find(w.name);
    if (it != stored_.end() && it->second == DType::kI8) {  // per-channel int8: scale is operand 3
      if (!b.present()) in.push_back("");
      in.push_back(w.name + ".scale");
    }
    return node("linear", std::move(in), {}, out);
  }

  std::string reshape(const std::string& x, std::vector<int64_t> shape, const std::string& out) {
    return node("reshape", {x}, attrs({{"shape", Value::int_array(shape)}}), out);
  }

  void declare_inputs() {
    auto in = [&](std::string n, DType t, Shape s, IORole r = IORole::kInput) { m_.inputs.push_back({std::move(n), {t, s}, r, ""}); };
    in(std::string(keys::kInputIds), DType::kI32, {1, T_});
    in(std::string(keys::kPositionIds), DType::kI32, {1, T_});
    if (!o_.logits_all) in(std::string(keys::kLogitsIndex), DType::kI32, {1});
    for (LayerKind k : {LayerKind::kGlobal, LayerKind::kSliding}) {
      if (!(k == LayerKind::kGlobal ? g_.has_global : g_.has_sliding)) continue;
      in(keys::cache_slots_name(layer_kind_name(k)), DType::kI32, {T_});
      in(keys::attn_mask_name(layer_kind_name(k)), DType::kF32, {1, 1, T_, g_.cache_len(k)});
    }
    for (size_t i = 0; i < s_.layers.size(); ++i) {
      const Shape cache{1, s_.n_kv_heads, g_.cache_len(s_.layers[i].kind), s_.head_dim};
      in(keys::k_cache_name(static_cast<int>(i)), o_.cache_dtype, cache, IORole::kState);
      in(keys::v_cache_name(static_cast<int>(i)), o_.cache_dtype, cache, IORole::kState);
    }
  }

  void declare_outputs() {
    const int64_t rows = o_.logits_all ? T_ : 1;
    m_.outputs.push_back({std::string(keys::kLogits), {DType::kF32, {1, rows, s_.vocab}}, IORole::kOutput, ""});
    for (size_t i = 0; i < s_.layers.size(); ++i) {
      const int li = static_cast<int>(i);
      const Shape cache{1, s_.n_kv_heads, g_.cache_len(s_.layers[i].kind), s_.head_dim};
      m_.outputs.push_back({keys::k_cache_out_name(li), {o_.cache_dtype, cache}, IORole::kState, keys::k_cache_name(li)});
      m_.outputs.push_back({keys::v_cache_out_name(li), {o_.cache_dtype, cache}, IORole::kState, keys::v_cache_name(li)});
    }
  }

  std::string layer(int i, const std::string& h_in) {
    const LayerSpec& L = s_.layers[static_cast<size_t>(i)];
    const std::string p = "l" + std::to_string(i) + ".";
    const std::string_view kind = layer_kind_name(L.kind);
    const std::string& rope = L.kind == LayerKind::kSliding ? rope_sliding_ : rope_global_;
    const int64_t Hq = s_.n_heads, Hkv = s_.n_kv_heads, D = s_.head_dim;

    // Attention block. x: [1, T, H]
    std::string x = norm(h_in, L.attn_norm, s_.norm_unit_offset, p + "attn_norm");
    std::string q = reshape(linear(x, L.q, L.q_bias, p + "q_proj"), {1, T_, Hq, D}, p + "q");    // [1, T, Hq, D]
    std::string k = reshape(linear(x, L.k, L.k_bias, p + "k_proj"), {1, T_, Hkv, D}, p + "k");   // [1, T, Hkv, D]
    std::string v = reshape(linear(x, L.v, L.v_bias, p + "v_proj"), {1, T_, Hkv, D}, p + "v");   // [1, T, Hkv, D]
    if (L.q_norm.present()) q = norm(q, L.q_norm, s_.qk_norm_unit_offset, p + "q_normed");
    if (L.k_norm.present()) k = norm(k, L.k_norm, s_.qk_norm_unit_offset, p + "k_normed");
    Attrs rope_attrs;
    if (s_.rope_attention_scaling != 1.0) rope_attrs["attention_scaling"] = Value(s_.rope_attention_scaling);
    q = node("rope", {q, std::string(keys::kPositionIds), rope}, rope_attrs, p + "q_rot");
    k = node("rope", {k, std::string(keys::kPositionIds), rope}, rope_attrs, p + "k_rot");
    // Write-first: the chunk's rows land in the cache, then attention reads the whole cache under the mask.
    const std::string slots = keys::cache_slots_name(kind);
    std::string kc = node("kv_cache_write", {keys::k_cache_name(i), k, slots}, {}, keys::k_cache_out_name(i));
    std::string vc = node("kv_cache_write", {keys::v_cache_name(i), v, slots}, {}, keys::v_cache_out_name(i));
    Attrs att = attrs({{"scale", Value(s_.attn_scale)}});
    if (s_.attn_softcap > 0) att["softcap"] = Value(s_.attn_softcap);
    std::string a = node("attention", {q, kc, vc, keys::attn_mask_name(kind)}, std::move(att), p + "attn");  // [1, T, Hq, D]
    a = reshape(a, {1, T_, Hq * D}, p + "attn_flat");
    std::string o = linear(a, L.o, L.o_bias, p + "o_proj");  // [1, T, H]
    if (L.post_attn_norm.present()) o = norm(o, L.post_attn_norm, s_.norm_unit_offset, p + "post_attn_norm");
    std::string h = node("add", {h_in, o}, {}, p + "h_attn");

    // MLP block.
    x = norm(h, L.ff_norm, s_.norm_unit_offset, p + "ff_norm");
    std::string gate = linear(x, L.gate, L.gate_bias, p + "gate_proj");  // [1, T, I]
    std::string up = linear(x, L.up, L.up_bias, p + "up_proj");
    gate = node(s_.act, {gate}, {}, p + "act");
    std::string m = node("mul", {gate, up}, {}, p + "gated");
    std::string d = linear(m, L.down, L.down_bias, p + "down_proj");  // [1, T, H]
    if (L.post_ff_norm.present()) d = norm(d, L.post_ff_norm, s_.norm_unit_offset, p + "post_ff_norm");
    return node("add", {h, d}, {}, p + "out");
  }

  const ModelSpec& s_;
  const Geometry& g_;
  const ExportOptions& o_;
  std::string rope_global_, rope_sliding_;
  const std::map<std::string, DType>& stored_;  // constant name → stored dtype (i8 linears take a scale)
  MethodDef m_;
  int64_t T_ = 1;
};

Value string_array(const std::vector<std::string>& v) {
  Value::Array a;
  for (const auto& s : v) a.emplace_back(s);
  return Value(std::move(a));
}

std::string base_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  auto pos = d.find_last_of('/');
  return pos == std::string::npos ? d : d.substr(pos + 1);
}

}  // namespace

Result<ExportPlan> assemble_plan(const ModelSpec& spec, const HfConfig& cfg, std::shared_ptr<const Checkpoint> ck,
                                 const ExportOptions& opt) {
  if (opt.cache_dtype != DType::kF32 && opt.cache_dtype != DType::kF16)
    return make_error(ErrorCode::kInvalidArgument, "cache dtype must be f32 or f16, got " + std::string(dtype_name(opt.cache_dtype)));
  if (opt.context < 0) return make_error(ErrorCode::kInvalidArgument, "context must be positive, got " + std::to_string(opt.context));
  if (opt.prefill_chunk < 0)
    return make_error(ErrorCode::kInvalidArgument, "prefill chunk must be positive, got " + std::to_string(opt.prefill_chunk));
  // Positions past max_position_embeddings are outside what the model was built for: asking for more is an
  // error, not a silent cap.
  if (opt.context > spec.max_positions)
    return make_error(ErrorCode::kInvalidArgument, "context " + std::to_string(opt.context) +
                                                       " exceeds the model's max_position_embeddings " +
                                                       std::to_string(spec.max_positions));
  if (spec.layers.empty()) return cfg.bad_value("num_hidden_layers", "must be positive");
  const size_t rot = spec.inv_freq_global.size();
  if (rot == 0 || static_cast<int64_t>(rot) * 2 > spec.head_dim ||
      (!spec.inv_freq_sliding.empty() && spec.inv_freq_sliding.size() != rot))
    return make_error(ErrorCode::kInternal, spec.arch + ": rotary frequencies do not fit head_dim " + std::to_string(spec.head_dim));

  ExportPlan plan;
  // Validate every weight first (nothing is produced before the whole checkpoint checks out).
  std::map<std::string, DType> stored;
  DType main_dtype = DType::kF32;
  for (const WeightRef* w : all_weights(spec)) {
    auto dt = check_weight(*w, *ck, cfg, opt.weights, w == &spec.embed || w == &spec.lm_head);
    if (!dt) return dt.error();
    if (stored.count(w->name)) continue;
    stored[w->name] = *dt;
    if (w == &spec.embed) main_dtype = *dt;
    plan.n_params += w->shape().numel();
    if (*dt == DType::kI8 || *dt == DType::kQ4_0) {
      for (PlannedConstant& c : quantized_constants(*w, *dt, ck, opt)) plan.constants.push_back(std::move(c));
    } else {
      plan.constants.push_back(weight_constant(*w, *dt, ck));
    }
  }

  Geometry g;
  const int64_t max_ctx = spec.max_positions;
  g.context = opt.context > 0 ? opt.context : std::min<int64_t>(max_ctx, 4096);
  if (opt.prefill_chunk > 0) {
    if (opt.prefill_chunk > g.context)
      return make_error(ErrorCode::kInvalidArgument,
                        "prefill chunk " + std::to_string(opt.prefill_chunk) + " exceeds the context length " +
                            std::to_string(g.context) +
                            (opt.context > 0 ? "" : " (the default context: min(max_position_embeddings, 4096))"));
    g.chunk = opt.prefill_chunk;
  } else {
    g.chunk = std::min(kDefaultPrefillChunk, g.context);
  }
  if (g.context > keys::kMaxContextLength)
    return make_error(ErrorCode::kInvalidArgument, "context " + std::to_string(g.context) + " exceeds the runtime's limit " +
                                                       std::to_string(keys::kMaxContextLength));
  for (const LayerSpec& L : spec.layers) (L.kind == LayerKind::kSliding ? g.has_sliding : g.has_global) = true;
  // A window at least as long as the context hides nothing: clamping it keeps W + C − 1 from overflowing and
  // the metadata within the runtime's range, with the same masks.
  const int64_t W = g.has_sliding ? std::min(spec.sliding_window, g.context) : 0;
  if (g.has_sliding && W <= 0) return cfg.bad_value("sliding_window", "sliding layers need a positive sliding_window");
  g.ring = g.has_sliding ? std::min(W + g.chunk - 1, g.context) : 0;

  // RoPE tables: one constant when both kinds share frequencies.
  auto add_floats = [&](const std::string& name, const std::vector<float>& v) {
    plan.constants.push_back(bytes_constant(name, {DType::kF32, {static_cast<int64_t>(v.size())}}, "floats:" + name, float_bytes(v)));
  };
  std::string rope_global = "rope.inv_freq", rope_sliding = "rope.inv_freq";
  const bool distinct = !spec.inv_freq_sliding.empty() && spec.inv_freq_sliding != spec.inv_freq_global && g.has_sliding;
  if (distinct) {
    rope_global = "rope.inv_freq.global";
    rope_sliding = "rope.inv_freq.sliding";
    if (g.has_global) add_floats(rope_global, spec.inv_freq_global);
    add_floats(rope_sliding, spec.inv_freq_sliding);
  } else {
    add_floats(rope_global, spec.inv_freq_global);
  }

  auto files = read_tokenizer_files(cfg.dir);
  if (!files) return files.error();
  HFS_TRY(check_tokenizer(*files, cfg, spec.vocab));
  for (const EmbeddedFile& f : *files) {
    if (f.bytes->empty()) continue;  // a zero-length constant carries nothing
    plan.constants.push_back(bytes_constant(std::string(keys::kFilePrefix) + f.file_name,
                                            {DType::kU8, {static_cast<int64_t>(f.bytes->size())}}, "file:" + f.file_name, f.bytes));
  }

  // Smaller prefill methods: the defaults, or the caller's list checked against C.
  std::vector<int64_t> variants;
  if (opt.prefill_variants) {
    variants = *opt.prefill_variants;
    if (variants.size() > keys::kMaxPrefillVariants)
      return make_error(ErrorCode::kInvalidArgument, "at most " + std::to_string(keys::kMaxPrefillVariants) +
                                                         " prefill variants, got " + std::to_string(variants.size()));
    std::sort(variants.begin(), variants.end());
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i] < 1 || variants[i] >= g.chunk)
        return make_error(ErrorCode::kInvalidArgument, "prefill variant " + std::to_string(variants[i]) +
                                                           " must be in [1, " + std::to_string(g.chunk - 1) +
                                                           "] (below the prefill chunk " + std::to_string(g.chunk) + ")");
      if (i > 0 && variants[i] == variants[i - 1])
        return make_error(ErrorCode::kInvalidArgument, "prefill variant " + std::to_string(variants[i]) + " is listed twice");
    }
  } else {
    for (int64_t t : {g.chunk / 16, g.chunk / 4, g.chunk / 2})  // strictly ascending once ≥ 2
      if (t >= 2) variants.push_back(t);
  }

  MethodBuilder mb(spec, g, opt, rope_global, rope_sliding, stored);
  plan.methods.push_back(mb.build("prefill", g.chunk));
  plan.methods.push_back(mb.build("decode", 1));
  std::vector<std::string> variant_names;
  for (int64_t t : variants) {
    variant_names.push_back("prefill_" + std::to_string(t));
    plan.methods.push_back(mb.build(variant_names.back(), t));
  }

  // Metadata.
  Metadata& md = plan.metadata;
  auto set = [&](std::string_view k, Value v) { md[std::string(k)] = std::move(v); };
  set(keys::kGeneralArchitecture, Value(spec.arch));
  const Value* name_or_path = cfg.root.get("_name_or_path");
  set(keys::kGeneralName, Value(name_or_path && name_or_path->is_string() && !name_or_path->as_string().empty()
                                    ? name_or_path->as_string() : base_name(cfg.dir)));
  set(keys::kGeneralSource, Value(cfg.dir));
  set(keys::kGeneralWeights, Value(opt.weights == WeightsMode::kInt8   ? std::string("int8")
                                   : opt.weights == WeightsMode::kInt4 ? std::string("int4")
                                                                       : std::string(dtype_name(main_dtype))));
  set(keys::kGeneralExporter, Value("hfstatic 0.1.0"));
  set(keys::kContract, Value(std::string(keys::kContractHfStatic)));
  set(keys::kContractVersion, Value(1));
  set(keys::kPrefillMethod, Value("prefill"));
  set(keys::kPrefillTokens, Value(g.chunk));
  if (!variants.empty()) {
    set(keys::kPrefillVariantMethods, string_array(variant_names));
    set(keys::kPrefillVariantTokens, Value::int_array(variants));
  }
  set(keys::kDecodeMethod, Value("decode"));
  set(keys::kDecodeTokens, Value(1));
  set(keys::kContextLength, Value(g.context));
  set(keys::kNumLayers, Value(static_cast<int64_t>(spec.layers.size())));
  set(keys::kNumKvHeads, Value(spec.n_kv_heads));
  set(keys::kHeadDim, Value(spec.head_dim));
  std::vector<std::string> kinds;
  std::vector<int64_t> lens;
  for (const LayerSpec& L : spec.layers) {
    kinds.emplace_back(layer_kind_name(L.kind));
    lens.push_back(g.cache_len(L.kind));
  }
  set(keys::kLayerKinds, string_array(kinds));
  set(keys::kLayerCacheLengths, Value::int_array(lens));
  set(keys::kSlidingWindow, Value(W));
  set(keys::kCacheDType, Value(std::string(dtype_name(opt.cache_dtype))));
  set(keys::kCacheLayout, Value(std::string(keys::kLayoutBHSD)));
  set(keys::kVocabSize, Value(spec.vocab));
  set(keys::kBosTokenId, Value(cfg.bos_token_id));
  set(keys::kEosTokenIds, Value::int_array(cfg.eos_token_ids));
  // pad must be a real id: the checkpoint's pad, else its first eos, else 0 (pad rows are masked anyway).
  const int64_t pad = cfg.pad_token_id >= 0 ? cfg.pad_token_id : !cfg.eos_token_ids.empty() ? cfg.eos_token_ids[0] : 0;
  set(keys::kPadTokenId, Value(pad));
  set(keys::kLogitsMode, Value(std::string(opt.logits_all ? keys::kLogitsAll : keys::kLogitsLast)));
  // Token ids index the embedding: [0, vocab_size), and -1 where HF configs use it for "none".
  auto bad_id = [&](const std::string& where, std::string_view key, int64_t id, int64_t lo) {
    return make_error(ErrorCode::kBadCheckpoint,
                      where + ": key '" + std::string(key) + "': id " + std::to_string(id) + " outside [" + std::to_string(lo) +
                          ", " + std::to_string(spec.vocab - 1) + "] (vocab_size " + std::to_string(spec.vocab) +
                          (lo < 0 ? "; -1 = none)" : ")"));
  };
  for (int64_t id : cfg.eos_token_ids)
    if (id < 0 || id >= spec.vocab) return bad_id(cfg.eos_where, "eos_token_id", id, 0);
  if (cfg.bos_token_id < -1 || cfg.bos_token_id >= spec.vocab) return bad_id(cfg.bos_where, "bos_token_id", cfg.bos_token_id, -1);
  if (cfg.pad_token_id < -1 || cfg.pad_token_id >= spec.vocab) return bad_id(cfg.pad_where, "pad_token_id", cfg.pad_token_id, -1);

  // Weight values last: the one pass over the data runs only once everything cheaper checked out.
  std::vector<std::pair<std::string, DType>> values;
  std::set<std::pair<std::string, DType>> listed;
  for (const WeightRef* w : all_weights(spec))
    if (std::pair<std::string, DType> v{w->source, stored.at(w->name)}; listed.insert(v).second) values.push_back(v);
  HFS_TRY(check_weight_values(*ck, values));
  return plan;
}

}  // namespace hfs
